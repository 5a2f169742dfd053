"""Valid records of plan.json, status.json, host.json, environment.json and job.json, each written by
the tool's own writer (a finished run of the tiny sweep, ``tests.recorded_runs.finished_run``; a
group's job.json by ``launch.group.record``), for the tests that walk the record registry.
``EXAMPLES``: registry key -> a function writing one under the directory given, returning its path."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.recorded_runs import finished_run


def _run(tmp: Path) -> Path:
    run = Path(tmp) / "run"
    return run if (run / "plan.json").is_file() else finished_run(run, repeats=2)


def _job(tmp: Path) -> Path:
    from llama4spec.launch import group

    run = Path(tmp) / "launched"
    environ = {"SLURM_JOB_ID": "4242", "SLURM_ARRAY_JOB_ID": "4241", "SLURM_ARRAY_TASK_ID": "0",
               "SLURM_JOB_NODELIST": "node[01-02]", "CUDA_VISIBLE_DEVICES": "0,1"}
    info = {"group": "sweep-none", **group.where(environ), "started": group.stamp(), "status": "running"}
    group.record(run, "sweep-none", {**info, "finished": group.stamp(), "exit": 0, "status": "done"})
    return run / "groups" / "sweep-none" / group.JOB_RECORD


EXAMPLES: dict[str, Callable[[Path], Path]] = {
    "plan": lambda tmp: _run(tmp) / "plan.json",
    "status": lambda tmp: _run(tmp) / "status.json",
    "host": lambda tmp: _run(tmp) / "host.json",
    "environment": lambda tmp: _run(tmp) / "environment.json",
    "job": _job,
}
