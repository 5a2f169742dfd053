"""The run directory's layout, fixed in one place.

    runs/<runbook>/<timestamp>/
      status.json        the run: status, steps (with their figures), comparisons
      summary.md         the same for people
      plan.json  environment.json  host.json  runbook.yaml
      <step id>/         one directory per step:
        serve:   server.log (multi-node: node0.log, node1.log, ...), config.yaml
        bench:   record.json (the typed record), run=0.json (vLLM's result), summary.json
                 (vLLM's sweep format: a list of runs, which vLLM's plotter reads), bench.log, config.yaml
        offline: record.json, config.yaml
        compare: table.md
        sweep:   report.md, sweep.json, sweep.csv, the plots

Run directories written before this layout (``summary.json`` as the status, ``<step>.json``
records beside it) are still read by ``--resume``.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama4spec.errors import UserError
from llama4spec.files import Expect, Unreadable, json_or_none, number, plain, shown
from llama4spec.yamlfiles import read_yaml
from llama4spec.results.bench import BenchRecord

STATUS = "status.json"
LEGACY_STATUS = "summary.json"
STEP_ID = re.compile(r"[A-Za-z][\w-]*")  # whole string (fullmatch): it names a directory
MAX_STEP_ID = 120  # a generated step id (a sweep's points) is at most this long
CONFIG = Expect("step config", "it is not a config this tool wrote; run the step again (--resume)", 1 << 20)


def is_step_id(value: Any) -> bool:
    """Whether ``value`` can be a step id: what planning accepts, so never a path (``../x``, ``a/b``)."""
    return isinstance(value, str) and len(value) <= MAX_STEP_ID and STEP_ID.fullmatch(value) is not None


def timestamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def new_run_dir(root: Path, runbook_name: str) -> Path:
    base = Path(root) / runbook_name / timestamp()
    run_dir, n = base, 1
    while run_dir.exists():
        n += 1
        run_dir = base.with_name(f"{base.name}-{n}")
    return run_dir


def read_status(run_dir: Path) -> dict[str, Any] | None:
    """A run directory's status (status.json, or summary.json of the earlier layout); None when
    there is none that reads as a status."""
    return status_or_problem(run_dir)[0]


def status_or_problem(run_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the run's status, None), or (None, why there is none: one line naming the file); a status
    read back is checked like a record written now (``status_problem``)."""
    problem = None
    for name in (STATUS, LEGACY_STATUS):
        data, problem_here = json_or_none(Path(run_dir) / name)
        if data is None and problem_here is None:
            continue
        problem_here = problem_here or status_problem(data, plain(str(Path(run_dir) / name)))
        if problem_here is None:
            return data, None
        problem = problem or problem_here
    return None, problem


def status_problem(data: Any, where: str) -> str | None:
    """Why ``data`` is not a run's status as this tool writes it (None when it is): its model
    (``records.status.StatusRecord``) in one line naming the field and the rule."""
    from llama4spec.records import status as status_record

    try:
        status_record.checked(data, where)
    except UserError as err:
        return str(err)
    return None


def step_dir(run_dir: Path, step_id: str) -> Path:
    return Path(run_dir) / step_id


def bench_files(directory: Path) -> dict[str, Path]:
    return {"result": directory / "run=0.json", "record": directory / "record.json",
            "points": directory / "summary.json", "log": directory / "bench.log"}


def legacy_bench_record(run_dir: Path, step_id: str) -> Path:
    """Where a bench step's record lay before the per-step layout."""
    return Path(run_dir) / f"{step_id}.json"


@dataclass
class Measured:
    """A bench step's counted record with the composed config it was measured with (plain data)."""

    id: str
    config: dict[str, Any]
    record: BenchRecord
    where: Path  # the step's directory


def read_config(path: Path | None) -> dict[str, Any] | None:
    """A step's config.yaml as plain data; None when missing, unreadable or wrongly typed."""
    return config_or_problem(path)[0] if path is not None else None


# A step's config.yaml: the keys reports read back, and the types they must have (as the schema has them)
CONFIG_TYPES: dict[str, tuple[type, ...]] = {
    "lookahead": (int, type(None)), "draft.method": (str, type(None)), "draft.name": (str, type(None)),
    "draft.model": (str, type(None)), "draft.lookahead_schedule": (list, type(None)), "target.model": (str,),
    "target.tokenizer": (str, type(None)), "bench.max_concurrency": (int,), "bench.category": (str, type(None)),
}


def config_or_problem(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(a step's config.yaml as plain data, None); (None, None) without one; (None, the one-line
    problem) when it is not a config this tool wrote: unreadable, not a mapping, a value of the
    wrong type (read with the runbook's caps: size, depth, aliases)."""
    where = plain(str(path))
    if not os.path.lexists(path):
        return None, None
    try:
        data = read_yaml(Path(path), CONFIG)
    except Unreadable as err:
        return None, str(err)
    if not isinstance(data, dict):
        return None, f"{where}: not a composed config (a mapping); it is not a record this tool wrote"
    flat = {}
    for key in CONFIG_TYPES:
        value, found = _dotted(data, key)
        if found:
            flat[key] = value
    for key, value in flat.items():
        types = CONFIG_TYPES[key]
        if isinstance(value, bool) or not isinstance(value, types):
            return None, f"{where}: {key} is {shown(value)}, not {' or '.join(t.__name__ for t in types if t is not type(None))}"
    if flat.get("bench.max_concurrency", 1) < 1 or (flat.get("lookahead") or 0) < 0:
        return None, f"{where}: bench.max_concurrency or lookahead is out of range; it is not a config this tool wrote"
    return data, None


def _dotted(data: Any, key: str) -> tuple[Any, bool]:
    for part in key.split("."):
        if not isinstance(data, dict) or part not in data:
            return None, False
        data = data[part]
    return data, True


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested config data as dotted keys: scalars as they are, lists as JSON text."""
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}{key}."))
    elif isinstance(data, list):
        out[prefix[:-1]] = json.dumps(data)
    else:
        out[prefix[:-1]] = data
    return out


def csv_rows(ids: list[str], measured: dict[str, Measured]) -> tuple[list[str], list[dict[str, Any]]]:
    """A sweep's CSV: one row per point and counted run, its setting's name (``Point.name``), every setting of its config
    (``config.*``), every number of vLLM's result for that run (``result.*``) and the run's
    acceptance counters (``acceptance.*``). Returns (header, rows)."""
    from llama4spec.analysis.points import points

    header: dict[str, None] = dict.fromkeys(("id", "setting", "run", "repeats", "warmup"))
    names = {p.id: p.name for p in points((pid, measured[pid].config, measured[pid].record)
                                          for pid in ids if pid in measured)}
    rows = []
    for pid in ids:
        m = measured.get(pid)
        if m is None:
            continue
        settings = {f"config.{k}": v for k, v in flatten(m.config).items()}
        runs = m.record.runs or [m.record]
        for i, run in enumerate(runs):
            row: dict[str, Any] = {"id": pid, "setting": names[pid], "run": i, "repeats": len(runs),
                                   "warmup": m.record.warmup, **settings}
            if m.record.stop is not None:  # measured until decided: why it stopped
                row["stop"] = m.record.stop.get("reason")
            if any(r.start != 1 for r in runs):  # a revisited point: the server start of each run
                row["server_start"] = run.start
            for key, value in (run.result or {}).items():
                if isinstance(value, (int, float, str, bool)) or value is None:
                    row[f"result.{key}"] = value
            if run.acceptance is not None:
                for key, value in run.acceptance.to_record(run.lookahead).items():
                    row[f"acceptance.{key}"] = json.dumps(value) if isinstance(value, list) else value
            if run.prefix_cache is not None:  # the server's prefix-cache counters around the run
                row.update({f"prefix_cache.{key}": value for key, value in run.prefix_cache.to_record().items()})
            header.update(dict.fromkeys(row))
            rows.append(row)
    return list(header), rows


def not_run(steps: list[dict[str, Any]]) -> dict[str, str]:
    """Step id -> why it has no result ("failed: ...", "skipped: ..."), from a status's steps."""
    return {str(e.get("id")): f"{e['status']}: {e.get('error') or e.get('reason') or 'no reason recorded'}"
            for e in steps if isinstance(e, dict) and e.get("status") in ("failed", "skipped")}


def vllm_runs(config: dict[str, Any], record: BenchRecord, label: str | None = None) -> list[dict[str, Any]]:
    """A point's ``summary.json`` in vLLM's sweep format (what ``vllm bench sweep plot`` reads): a
    list of runs, each vLLM's result with the point's settings and the run's acceptance length."""
    draft, bench = config.get("draft") or {}, config.get("bench") or {}
    settings = {"label": label or record.label, "draft": draft.get("name") if draft.get("method") else "none",
                "lookahead": record.lookahead or 0, "max_concurrency": bench.get("max_concurrency"),
                "category": bench.get("category")}
    out = []
    for i, run in enumerate(record.runs or [record]):
        acc = run.acceptance.mean_acceptance_length if run.acceptance else None
        out.append({**(run.result or {}), **settings, "run_number": i, "acceptance_length": acc})
    return out


MAX_VERDICTS = 64  # sentences a step's result may add to the run's verdicts


def step_verdicts(steps: list[Any]) -> list[tuple[str, str]]:
    """(step id, sentence) for every verdict a step's result states (its ``verdicts``: a kind that
    judges, the lossless check, lists them there), as plain one-line text."""
    out = []
    for e in steps:
        result = e.get("result") if isinstance(e, dict) else None
        said = result.get("verdicts") if isinstance(result, dict) else None
        if isinstance(said, list):
            out += [(plain(str(e.get("id")), 64), plain(line, 600)) for line in said[:MAX_VERDICTS]
                    if isinstance(line, str)]
    return out


def summary_markdown(summary: dict[str, Any], description: str = "") -> str:
    """summary.md from a run's status: the steps, each failure with its reason and log tail, the
    skipped steps by reason, then every comparison and sweep report."""
    lines = [f"# {summary.get('runbook')}", "", description, "",
             f"status: **{summary.get('status')}**, started {summary.get('started')}", ""]
    cost = summary.get("cost")
    if isinstance(cost, dict) and isinstance(cost.get("sentence"), str):
        lines += [cost["sentence"], ""]
    if isinstance(summary.get("merged_from"), list) and summary["merged_from"]:
        lines += ["merged from: " + ", ".join(str(d) for d in summary["merged_from"]), ""]
    lines += ["| step | kind | status | seconds |", "|---|---|---|---:|"]
    steps = [e for e in summary.get("steps") or [] if isinstance(e, dict)] if isinstance(summary.get("steps"), list) else []
    for st in steps:
        secs = st.get("seconds")
        secs = "" if number(secs) is None else f"{number(secs):.1f}"
        status = f"{st.get('status')}" + (" (earlier run)" if st.get("resumed") else "")
        lines.append(f"| {st.get('id')} | {st.get('kind')} | {status} | {secs} |")
    said = step_verdicts(steps)
    if said:
        lines += ["", "## Verdicts", ""] + [f"- {sid}: {line}" for sid, line in said]
    failed = [e for e in steps if e.get("status") == "failed"]
    skipped: dict[str, list[str]] = {}
    for e in steps:
        if e.get("status") == "skipped" and e.get("reason"):
            skipped.setdefault(str(e["reason"]), []).append(str(e.get("id")))
    if failed or skipped:
        lines += ["", "## Failures", ""]
        for e in failed:
            lines.append(f"- {e['id']} ({e.get('kind')}) failed: {e.get('error') or 'no reason recorded'}")
            if isinstance(e.get("log_tail"), list) and e["log_tail"]:
                lines += ["", "  ```", *(f"  {line}" for line in e["log_tail"]), "  ```", ""]
        for reason, ids in skipped.items():
            lines.append(f"- skipped ({reason}): {', '.join(ids)}")
    comparisons = summary.get("comparisons")
    for step_id, table in (comparisons if isinstance(comparisons, dict) else {}).items():
        lines += ["", f"## {step_id}", "", table]
    return "\n".join(lines) + "\n"
