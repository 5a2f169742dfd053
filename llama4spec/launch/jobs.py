"""Jobs and their states, whatever runs them: one row per server group."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llama4spec.runbook.groups import group_dir
from llama4spec.runbook.rundir import read_status
from llama4spec.serving.process import log_tail

PENDING, RUNNING, DONE, FAILED, CANCELLED, SKIPPED = "pending", "running", "done", "failed", "cancelled", "skipped"
FINAL = (DONE, FAILED, CANCELLED, SKIPPED)


@dataclass
class Job:
    group: str
    job_id: str  # Slurm: ARRAY_TASK (12_0); here: local-N
    shape: str  # what it asked for (1 CPU, 4 GPUs, 2 nodes x 8 GPUs)
    state: str = PENDING
    node: str | None = None
    devices: dict[str, str] = field(default_factory=dict)
    start: str | None = None
    end: str | None = None
    log: str | None = None  # its output (Slurm: submitit's log files; here: RUN_DIR/logs/<group>.log)
    err_log: str | None = None
    reason: str | None = None  # why it failed, when known

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "Job":
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__ if k in data})


def group_status(run_dir: Path, group: str) -> str | None:
    """The status a group's own run recorded (done, failed, interrupted, running), or None."""
    data = read_status(group_dir(run_dir, group))
    return data.get("status") if data is not None else None


def group_where(run_dir: Path, group: str) -> dict[str, Any]:
    """job.json of a group: where it ran (node, devices, start and end)."""
    try:
        data = json.loads((group_dir(run_dir, group) / "job.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def settle(job: Job, run_dir: Path) -> Job:
    """A finished job's state from its group's own record: a job that exited 0 but whose group
    failed is failed; node, devices and times from job.json where the scheduler gave none."""
    where = group_where(run_dir, job.group)
    job.node = job.node or where.get("node")
    job.devices = job.devices or where.get("devices") or {}
    job.start = job.start or where.get("started")
    job.end = job.end or where.get("finished")
    if job.state == DONE and group_status(run_dir, job.group) != "done":
        job.state = FAILED
        job.reason = job.reason or f"the group's run ended '{group_status(run_dir, job.group) or 'without a record'}'"
    return job


def tail(path: str | None, lines: int = 15) -> list[str]:
    """The last ``lines`` lines of a job's log that are not blank; none without a log."""
    return log_tail(Path(path), lines, skip_blank=True) if path else []
