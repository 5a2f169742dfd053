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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from llama4spec.results.bench import BenchRecord

STATUS = "status.json"
LEGACY_STATUS = "summary.json"


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
    there is none that reads as a mapping."""
    for name in (STATUS, LEGACY_STATUS):
        try:
            data = json.loads((Path(run_dir) / name).read_text())
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(data, dict):
            return data
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
    """A step's config.yaml as plain data; None when missing or unreadable."""
    if path is None:
        return None
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


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
    """A sweep's CSV: one row per point and counted run, with every setting of its config
    (``config.*``), every number of vLLM's result for that run (``result.*``) and the run's
    acceptance counters (``acceptance.*``). Returns (header, rows)."""
    header: dict[str, None] = dict.fromkeys(("id", "run", "repeats", "warmup"))
    rows = []
    for pid in ids:
        m = measured.get(pid)
        if m is None:
            continue
        settings = {f"config.{k}": v for k, v in flatten(m.config).items()}
        runs = m.record.runs or [m.record]
        for i, run in enumerate(runs):
            row: dict[str, Any] = {"id": pid, "run": i, "repeats": len(runs), "warmup": m.record.warmup, **settings}
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
            header.update(dict.fromkeys(row))
            rows.append(row)
    return list(header), rows


def not_run(steps: list[dict[str, Any]]) -> dict[str, str]:
    """Step id -> why it has no result ("failed: ...", "skipped: ..."), from a status's steps."""
    return {e["id"]: f"{e['status']}: {e.get('error') or e.get('reason') or 'no reason recorded'}"
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


def summary_markdown(summary: dict[str, Any], description: str = "") -> str:
    """summary.md from a run's status: the steps, each failure with its reason and log tail, the
    skipped steps by reason, then every comparison and sweep report."""
    lines = [f"# {summary.get('runbook')}", "", description, "",
             f"status: **{summary.get('status')}**, started {summary.get('started')}", ""]
    if summary.get("merged_from"):
        lines += ["merged from: " + ", ".join(str(d) for d in summary["merged_from"]), ""]
    lines += ["| step | kind | status | seconds |", "|---|---|---|---:|"]
    steps = [e for e in summary.get("steps") or [] if isinstance(e, dict)]
    for st in steps:
        secs = st.get("seconds")
        status = f"{st.get('status')}" + (" (earlier run)" if st.get("resumed") else "")
        lines.append(f"| {st.get('id')} | {st.get('kind')} | {status} | {'' if secs is None else f'{secs:.1f}'} |")
    failed = [e for e in steps if e.get("status") == "failed"]
    skipped: dict[str, list[str]] = {}
    for e in steps:
        if e.get("status") == "skipped" and e.get("reason"):
            skipped.setdefault(e["reason"], []).append(e["id"])
    if failed or skipped:
        lines += ["", "## Failures", ""]
        for e in failed:
            lines.append(f"- {e['id']} ({e.get('kind')}) failed: {e.get('error') or 'no reason recorded'}")
            if e.get("log_tail"):
                lines += ["", "  ```", *(f"  {line}" for line in e["log_tail"]), "  ```", ""]
        for reason, ids in skipped.items():
            lines.append(f"- skipped ({reason}): {', '.join(ids)}")
    for step_id, table in (summary.get("comparisons") or {}).items():
        lines += ["", f"## {step_id}", "", table]
    return "\n".join(lines) + "\n"
