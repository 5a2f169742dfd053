"""``cancel``: cancel the Slurm jobs of a detached run (``run --launcher slurm --detach``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from llama4spec.cli.common import Command, say
from llama4spec.errors import UserError


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, help="the run directory the submitting command printed")


def _run(args: argparse.Namespace) -> int:
    from llama4spec.files import json_or_none, write_json
    from llama4spec.launch import jobs as J, slurm
    from llama4spec.runbook.rundir import STATUS, status_problem

    path = args.run_dir / STATUS
    status, problem = json_or_none(path)
    problem = problem or (status_problem(status, str(path)) if status is not None else None)
    if status is None or problem is not None:
        raise UserError(f"{problem or f'{args.run_dir}: no {STATUS} there'}; give the run directory "
                        f"`llama4spec run ... --launcher slurm` printed")
    if status.get("launcher") != "slurm":
        raise UserError(f"{args.run_dir}: not a run submitted to Slurm (llama4spec run ... --launcher slurm); "
                        f"nothing to cancel")
    if not all(isinstance(j, dict) for j in status.get("jobs", [])):
        raise UserError(f"{path}: a job that is not a mapping; it is not a record this tool wrote")
    jobs = [J.Job.from_record(j) for j in status.get("jobs", [])]
    live = [j for j in jobs if j.state not in J.FINAL and j.job_id != "-"]
    if not live:
        say("no pending or running job in this run")
        return 0
    ids = slurm.cancel(live)
    slurm.refresh(live)
    for job in live:
        if job.state not in (J.DONE, J.FAILED):
            job.state = J.CANCELLED
    status.update(status="cancelled", jobs=[j.to_record() for j in jobs])
    write_json(path, status)
    say(f"cancelled Slurm job{'s' if len(ids) > 1 else ''} {', '.join(ids)} ({len(live)} groups)")
    return 0


COMMANDS = [Command("cancel", "cancel the Slurm jobs of a detached run (run --launcher slurm --detach)",
                    _arguments, _run, examples=["llama4spec cancel runs/tiny_cpu_sweep/TIMESTAMP"])]
