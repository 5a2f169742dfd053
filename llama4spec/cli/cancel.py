"""``cancel``: cancel the Slurm jobs of a detached run (``run --launcher slurm --detach``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from llama4spec.cli.common import Command, say
from llama4spec.errors import UserError


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, help="the run directory the submitting command printed")


def _run(args: argparse.Namespace) -> int:
    from llama4spec.files import json_or_none, plain, write_json
    from llama4spec.launch import jobs as J, slurm
    from llama4spec.records.status import checked
    from llama4spec.runbook.rundir import STATUS

    path = args.run_dir / STATUS
    status, problem = json_or_none(path)
    fix = "give the run directory `llama4spec run ... --launcher slurm` printed"
    if status is None:
        raise UserError(f"{problem or f'{args.run_dir}: no {STATUS} there'}; {fix}")
    try:
        record = checked(status, plain(str(path)))
    except UserError as err:
        raise UserError(f"{err}; {fix}") from None
    if record.launcher != "slurm":
        raise UserError(f"{args.run_dir}: not a run submitted to Slurm (llama4spec run ... --launcher slurm); "
                        f"nothing to cancel")
    jobs = [J.Job.from_entry(j) for j in record.jobs]
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
