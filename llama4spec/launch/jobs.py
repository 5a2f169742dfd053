"""Jobs and their states, whatever runs them: one row per server group."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llama4spec.runbook.groups import group_dir
from llama4spec.runbook.rundir import read_status
from llama4spec.serving.process import log_tail

PENDING, RUNNING, DONE, FAILED, CANCELLED, SKIPPED = "pending", "running", "done", "failed", "cancelled", "skipped"
FINAL = (DONE, FAILED, CANCELLED, SKIPPED)
MAX_FIELD = 4_096  # a job's field read back (a node list, a log path, a reason)


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
    def from_entry(cls, entry: Any) -> "Job":
        """A job read back from status.json through its model (``records.status.JobEntry``)."""
        return cls(group=entry.group, job_id=entry.job_id, shape=entry.shape, state=entry.state, node=entry.node,
                   devices=dict(entry.devices), start=entry.start, end=entry.end, log=entry.log,
                   err_log=entry.err_log, reason=entry.reason)


def group_status(run_dir: Path, group: str) -> str | None:
    """The status a group's own run recorded (done, failed, interrupted, running), or None."""
    data = read_status(group_dir(run_dir, group))
    return data.get("status") if data is not None and isinstance(data.get("status"), str) else None


def group_where(run_dir: Path, group: str) -> dict[str, Any]:
    """job.json of a group through its model (``records.job``): where it ran (node, devices,
    start and end); empty without one, or with one this tool did not write."""
    from llama4spec.records.job import job_or_problem

    job, _ = job_or_problem(group_dir(run_dir, group) / "job.json")
    if job is None:
        return {}
    out: dict[str, Any] = {k: v for k, v in (("node", job.node), ("started", job.started),
                                             ("finished", job.finished), ("status", job.status)) if v is not None}
    if job.devices:
        out["devices"] = dict(job.devices)
    return out


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
