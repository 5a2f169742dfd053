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

import time
from pathlib import Path

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


def step_dir(run_dir: Path, step_id: str) -> Path:
    return Path(run_dir) / step_id


def bench_files(directory: Path) -> dict[str, Path]:
    return {"result": directory / "run=0.json", "record": directory / "record.json",
            "points": directory / "summary.json", "log": directory / "bench.log"}


def legacy_bench_record(run_dir: Path, step_id: str) -> Path:
    """Where a bench step's record lay before the per-step layout."""
    return Path(run_dir) / f"{step_id}.json"
