"""What the submitting side of ``run`` shares with the launchers and the finish: its caller's
console, doctor gate and quietness (``Here``), its records (``write_records``) and what a job or a
slot runs for a group (``command``)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rich.console import Console

from llama4spec.launch.options import RunOptions


@dataclass(frozen=True)
class Here:
    """What the submitting side takes from its caller: where it prints, the doctor's gate for
    every engine step (``check(composed, step_id)``), and whether to keep quiet (-q)."""

    console: Console
    check: Callable[[Any, str], None]
    quiet: bool = False


def write_records(plan, status: dict[str, Any]) -> None:
    """The submitting side's records: runbook.yaml, plan.json (the whole plan) and status.json (with
    the jobs), through the run's one recorder."""
    from llama4spec.results.provenance import plan_secrets
    from llama4spec.runbook.recorder import Recorder
    from llama4spec.runbook.rundir import STATUS

    records = Recorder(plan.run_dir, plan_secrets(plan))
    records.start(plan, plan.source_text())
    records.json(STATUS, status)


def measure(opts: RunOptions) -> dict[str, Any]:
    """The measurement options of ``run`` that are set, to pass on as given."""
    return {k: getattr(opts, k) for k in ("repeats", "warmup") if getattr(opts, k, None) is not None}


def stop_args(opts: RunOptions) -> dict[str, Any]:
    return {"stop_on_error": True} if opts.stop_on_error else {}


def command(opts: RunOptions, runbook: Path, run_dir: Path, name: str) -> list[str]:
    """What a job or a slot runs for group ``name`` (no secrets: the job's environment carries them)."""
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []  # never a llama4spec/ of the working directory
    argv = [sys.executable, *safe_path, "-m", "llama4spec", "run", str(runbook.resolve()), *opts.overrides,
            "--only-group", name, "--into", str(run_dir.resolve())]
    for k, v in measure(opts).items():
        argv += [f"--{k}", str(v)]
    return argv + (["--force"] if opts.force else []) + (["--stop-on-error"] if stop_args(opts) else [])
