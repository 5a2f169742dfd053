"""When every group's job has ended: the jobs' table, each failure with its log tail, where the
groups ran (summary.md), and the merged report over every group's records."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.console import Console

from llama4spec.launch import job_table as render
from llama4spec.launch.here import Here, write_records


def node_types(run_dir: Path, groups: list[str]) -> dict[str, list[str]]:
    """Node type (GPUs, else CPU model) -> the groups that ran on it, from each group's host.json."""
    from llama4spec.records.host import host_or_problem

    found: dict[str, list[str]] = {}
    for name in groups:
        record, _ = host_or_problem(run_dir / "groups" / name / "host.json")
        if record is None:
            continue  # none, or one this tool did not write: its node's type is not known
        found.setdefault(record.host.kind() or "unknown", []).append(name)
    return found


def finish(plan, status: dict[str, Any], jobs, use_slurm: bool, here: Here) -> int:
    """The jobs' table, each failure with its log tail, then the merged report."""
    from llama4spec.launch import jobs as J

    run_dir = plan.run_dir
    failed = [j for j in jobs if j.state != J.DONE]
    types = node_types(run_dir, [j.group for j in jobs])
    status.update(status="failed" if failed else "done", finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  jobs=[j.to_record() for j in jobs], node_types=types)
    write_records(plan, status)
    render.jobs(here.console, jobs)
    for job in failed:
        render.say(here.console, f"group {job.group} (job {job.job_id}) {job.state}{f': {job.reason}' if job.reason else ''}; "
            f"log: {job.log}", "bold red")
        render.tail(here.console, J.tail(job.err_log) + J.tail(job.log) if use_slurm else J.tail(job.log))
    if failed:
        render.say(here.console, f"measure what is missing with: llama4spec run {plan.runbook.path} "
            f"{'--launcher slurm ' if use_slurm else ''}--resume {run_dir}")
    if len(types) > 1:
        render.say(here.console, "the groups ran on different node types: " +
            "; ".join(f"{kind}: {', '.join(names)}" for kind, names in types.items()), "yellow")
    code = merge(run_dir, here.console)
    where_ran(run_dir, jobs, types)
    return 1 if failed else code


def where_ran(run_dir: Path, jobs, types: dict[str, list[str]]) -> None:
    """The merged summary.md says where each group ran, and when groups ran on different node types."""
    lines = ["", "## Where the groups ran", "", "| group | job | state | node | devices | start | end |",
             "|---|---|---|---|---|---|---|"]
    for j in jobs:
        devices = " ".join(f"{k}={v}" for k, v in (j.devices or {}).items())
        lines.append(f"| {j.group} | {j.job_id} | {j.state} | {j.node or ''} | {devices} | {j.start or ''} | "
                     f"{j.end or ''} |")
    if len(types) > 1:
        lines += ["", "The groups ran on different node types: " +
                  "; ".join(f"{kind}: {', '.join(names)}" for kind, names in types.items()) + "."]
    from llama4spec.files import RECORD, Unreadable, read_text, write_atomic

    path = run_dir / "summary.md"
    try:
        before = read_text(path, RECORD)
    except Unreadable:
        before = ""  # none (the report wrote none): the table alone
    write_atomic(path, before + "\n".join(lines) + "\n")


def merge(run_dir: Path, console: Console) -> int:
    """The merged report over every group's records (llama4spec report RUN_DIR), and its report.html."""
    from llama4spec.runbook import write_page as page
    from llama4spec.runbook.merge import rebuild

    code = rebuild([run_dir], None, console)
    page.write(run_dir)
    return code
