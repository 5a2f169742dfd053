"""A capacity step's report from the records of its searches: every search.json read back (as
input: ``capacity.from_json`` validates it), the probes' records for the plots; written to the
step's directory (report.md, capacity.json, one latency-throughput PNG per setting) and printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from rich.console import Console

from llama4spec.errors import UserError
from llama4spec.files import json_or_none, write_atomic
from llama4spec.results import bench as bench_record
from llama4spec.sweep import capacity_report, plots
from llama4spec.sweep.capacity import METRICS, Search, capacity, from_json

PROBES = "probes"  # a search step's probe directories, under its own


def probe_dir(step_dir: Path, rate: float) -> Path:
    """Where a search step keeps the runs of its probe at ``rate``."""
    return step_dir / PROBES / f"rate={rate:g}"


def read_search(path: Path) -> tuple[Search | None, dict[str, Any], str | None]:
    """(search, its recorded SLO {thresholds, slo}, None) or (None, {}, why not)."""
    data, problem = json_or_none(path)
    if data is None:
        return None, {}, problem or "no search.json (the search did not run)"
    try:
        search = from_json(data)
    except UserError as err:
        return None, {}, "; ".join(err.problems)
    thresholds = data.get("thresholds")
    thresholds = {m: float(v) for m, v in thresholds.items() if m in METRICS and isinstance(v, (int, float))
                  and not isinstance(v, bool)} if isinstance(thresholds, dict) else {}
    basis = data.get("slo") if isinstance(data.get("slo"), dict) else {}
    return search, {"thresholds": thresholds, "slo": basis}, None


def probe_runs(step_dir: Path, search: Search, metrics: list[str], percent: float) -> list[tuple[float, dict]]:
    """Each recorded run of the search's probes: (request throughput, metric -> P``percent`` ms)."""
    out = []
    for probe in search.probes:
        record = bench_record.read(probe_dir(step_dir, probe.rate) / "record.json")
        for run in (record.runs or [record]) if record is not None else []:
            x = run.figure("request_throughput")
            if x is not None:
                out.append((x, {m: run.percentile_ms(m, percent) for m in metrics}))
    return out


def run_report(plan, planned, console: Console, failures: Mapping[str, str] | None = None) -> tuple[str, dict]:
    """Analyse a capacity step's searches, write its files, print it; (markdown, record)."""
    keys = planned.step.keys
    searches: dict[str, Search] = {}
    missing: dict[str, str] = {}
    recorded: dict[str, dict[str, Any]] = {}
    for sid in keys.points:
        name = keys.names.get(sid, sid)
        search, slo, why = read_search(plan.get(sid).artifacts["search"])
        if search is None or not search.probes:
            missing[name] = (failures or {}).get(sid) or why or "no probe measured"
            continue
        searches[name], recorded[name] = search, slo
    first = next(iter(recorded.values()), {"thresholds": {}, "slo": {}})
    slo = capacity_report.slo_words(first["thresholds"], first["slo"])
    baseline = keys.names.get(keys.baseline) if keys.baseline else None
    record = capacity_report.analyse(searches, baseline, slo, missing)
    record["thresholds"] = first["thresholds"]
    record["resolved"] = first["slo"]
    images = {}
    for sid in keys.points:
        name = keys.names.get(sid, sid)
        if name not in searches:
            continue
        search, path = searches[name], planned.artifacts[f"latency-{sid}"]
        percent = round(100 * search.settings.target, 6)
        thresholds = recorded[name]["thresholds"]
        runs = probe_runs(plan.get(sid).dir, search, list(thresholds), percent)
        plots.latency_vs_throughput(name, runs, thresholds, percent, capacity(search).rate, path)
        images[name] = path.name
    text = capacity_report.markdown(record, images)
    write_atomic(planned.artifacts["report"], text)
    write_atomic(planned.artifacts["analysis"], json.dumps(record, indent=2) + "\n")
    capacity_report.render(console, record)
    return text, record
