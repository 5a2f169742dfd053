"""What the submitting side shows: the job table (one row per server group: its job, state, node,
devices, start and end), lines of text, log tails."""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.markup import escape
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


def jobs(console: Console, found: Sequence[Job]) -> None:
    """The job table, with its counts as the title."""
    console.print(table(found, title=f"jobs: {counts(found)}"))


def say(console: Console, text: str, style: str | None = None) -> None:
    """Text that may hold user input (paths, names): never read as markup."""
    console.print(escape(text) if style is None else f"[{style}]{escape(text)}[/{style}]", highlight=False,
                  soft_wrap=True)


def tail(console: Console, lines: Sequence[str]) -> None:
    """A log's last lines, indented."""
    for line in lines:
        console.print(f"  | {line}", markup=False, highlight=False, soft_wrap=True)
