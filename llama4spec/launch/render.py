"""The job table: one row per server group (its job, state, node, devices, start and end)."""

from __future__ import annotations

from typing import Sequence

from rich.table import Table
from rich.text import Text

from llama4spec.launch.jobs import CANCELLED, DONE, FAILED, PENDING, RUNNING, Job

STYLE = {PENDING: "yellow", RUNNING: "cyan", DONE: "green", FAILED: "bold red", CANCELLED: "magenta"}


def table(jobs: Sequence[Job], title: str | None = None) -> Table:
    t = Table(title=title, title_justify="left")
    for column in ("group", "job", "asks for", "state", "node", "devices", "start", "end"):
        t.add_column(column)
    for j in jobs:
        devices = " ".join(f"{k}={v}" for k, v in (j.devices or {}).items())
        t.add_row(Text(j.group), Text(j.job_id), Text(j.shape), Text(j.state, style=STYLE.get(j.state, "")),
                  Text(j.node or ""), Text(devices), Text(j.start or ""), Text(j.end or ""))
    return t


def counts(jobs: Sequence[Job]) -> str:
    order = (PENDING, RUNNING, DONE, FAILED, CANCELLED)
    found = {s: sum(j.state == s for j in jobs) for s in order}
    return ", ".join(f"{n} {s}" for s, n in found.items() if n) or "no jobs"
