"""Where the groups run once submitted: Slurm jobs wave after wave (``SlurmRun``), or children
here up to --parallel at once (``LocalRun``); ``wait`` follows them to the end."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol

from llama4spec.errors import UserError
from llama4spec.launch.here import Here, write_records

POLL_S = 2.0
CANCEL_WAIT_S = 60.0


class Launcher(Protocol):
    """Where the groups run: Slurm jobs, or children here. ``jobs`` holds one Job per group started."""

    jobs: list

    def start(self) -> None: ...

    def poll(self) -> bool:
        """Refresh the jobs' states; whether any is still pending or running."""

    def cancel(self) -> None: ...

    def ids(self) -> list[str]:
        """The jobs cancelled (their ids), for the message."""


class SlurmRun:
    """Groups as Slurm jobs, wave after wave through dependencies (a schedule-verifying group
    starts after the groups it derives from)."""

    def __init__(self, plan, groups, commands, waves_):
        self.plan, self.groups, self.commands, self.waves = plan, groups, commands, waves_
        self.jobs: list = []

    def start(self) -> None:
        from llama4spec.launch import slurm

        folder = self.plan.run_dir / "slurm"
        for wave in self.waves:
            dependency = f"afterany:{':'.join(slurm.array_ids(self.jobs))}" if self.jobs else None
            self.jobs += slurm.submit(wave, self.commands, self._slurm(wave), folder,
                                      f"l4s-{self.plan.runbook.name}", Path.cwd(), dependency)

    def _slurm(self, wave):
        return self.plan.get(wave[0].name).composed.cfg.cluster.slurm

    def poll(self) -> bool:
        from llama4spec.launch import jobs as J, slurm

        slurm.refresh(self.jobs)
        for job in self.jobs:
            if job.state in J.FINAL:
                J.settle(job, self.plan.run_dir)
        return any(j.state not in J.FINAL for j in self.jobs)

    def cancel(self) -> None:
        from llama4spec.launch import jobs as J, slurm

        if not self.jobs:
            return
        try:
            slurm.cancel(self.jobs)
        except UserError:
            pass  # the states below say what is still running
        deadline = time.monotonic() + CANCEL_WAIT_S
        while time.monotonic() < deadline:
            slurm.refresh(self.jobs)
            if all(j.state in J.FINAL for j in self.jobs):
                break
            time.sleep(1)
        for job in self.jobs:
            if job.state not in (J.DONE, J.FAILED):
                job.state = J.CANCELLED

    def ids(self) -> list[str]:
        return [j.job_id for j in self.jobs]


class LocalRun:
    """Groups as children here, up to --parallel at once."""

    def __init__(self, pool, groups):
        self.pool, self.groups = pool, groups
        self.jobs = pool.jobs

    def start(self) -> None:
        self.poll()

    def poll(self) -> bool:
        from llama4spec.launch import jobs as J

        final = {j.group for j in self.jobs if j.state in J.FINAL}
        names = {g.name for g in self.groups}
        ready = {g.name for g in self.groups if all(a in final or a not in names for a in g.after)}
        left = self.pool.step(ready)
        for job in self.jobs:
            if job.state in J.FINAL:
                J.settle(job, self.pool.logs.parent)
        return left

    def cancel(self) -> None:
        self.pool.cancel()

    def ids(self) -> list[str]:
        return [j.job_id for j in self.jobs if j.state == "cancelled"]


def wait(launcher: Launcher, kept, plan, status, here: Here) -> None:
    """Until every job ends: a live table of their states (none with -q)."""
    from llama4spec.launch.job_table import counts, table
    from llama4spec.serving.process import sigterm_unwinds

    quiet = here.quiet

    def current():
        return table([*kept, *launcher.jobs], title=f"jobs: {counts(launcher.jobs)}")

    with sigterm_unwinds():
        if quiet:
            while launcher.poll():
                time.sleep(POLL_S)
                status["jobs"] = [j.to_record() for j in [*kept, *launcher.jobs]]
                write_records(plan, status)
            return
        from rich.live import Live

        with Live(current(), console=here.console, refresh_per_second=2, transient=True) as live:
            while launcher.poll():
                status["jobs"] = [j.to_record() for j in [*kept, *launcher.jobs]]
                write_records(plan, status)
                live.update(current())
                time.sleep(POLL_S)
