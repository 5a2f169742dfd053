"""Jobs and their states, whatever runs them: one row per server group."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llama4spec.errors import UserError
from llama4spec.files import json_or_none, shown
from llama4spec.runbook.groups import group_dir
from llama4spec.runbook.rundir import STATUS, is_step_id, read_status
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
    def from_record(cls, data: dict[str, Any]) -> "Job":
        """A job read back from status.json: every field of its type (text, or a mapping of text for
        ``devices``); a value of another type is left at its default. UserError without a group name."""
        kept: dict[str, Any] = {}
        for name in cls.__dataclass_fields__:
            value = data.get(name)
            if name == "devices":
                if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
                    kept[name] = {str(k): v for k, v in value.items()}
            elif isinstance(value, str) and len(value) <= MAX_FIELD and value.isprintable():
                kept[name] = value
        if not is_step_id(kept.get("group")):
            raise UserError(f"a job without a valid group name ({shown(data.get('group'))}) in {STATUS}; "
                            f"it is not a record this tool wrote")
        return cls(**{"job_id": "-", "shape": "-", **kept})


def group_status(run_dir: Path, group: str) -> str | None:
    """The status a group's own run recorded (done, failed, interrupted, running), or None."""
    data = read_status(group_dir(run_dir, group))
    return data.get("status") if data is not None and isinstance(data.get("status"), str) else None


def group_where(run_dir: Path, group: str) -> dict[str, Any]:
    """job.json of a group: where it ran (node, devices, start and end), each of its type."""
    data, _ = json_or_none(group_dir(run_dir, group) / "job.json")
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {k: data[k] for k in ("node", "started", "finished", "status")
                           if isinstance(data.get(k), str) and len(data[k]) <= MAX_FIELD}
    devices = data.get("devices")
    if isinstance(devices, dict) and all(isinstance(v, str) for v in devices.values()):
        out["devices"] = {str(k): v for k, v in devices.items()}
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
