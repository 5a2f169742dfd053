"""Several server groups at once on this machine (``run --parallel N``): each group a child
``llama4spec run --only-group``, with its own port and its own devices (CUDA_VISIBLE_DEVICES
split by the group's TP x PP on GPUs; disjoint VLLM_CPU_OMP_THREADS_BIND core sets on the CPU
build). A child stops when this process dies (parent-death signal)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Mapping, Sequence

from llama4spec.errors import UserError
from llama4spec.engine.devices import machine_devices
from llama4spec.launch.devices import device_env, slots
from llama4spec.launch.jobs import CANCELLED, DONE, FAILED, PENDING, RUNNING, Job
from llama4spec.runbook.groups import Group, Shape
from llama4spec.serving.process import spawn, stop_groups


def device_slots(groups: Sequence[Group], parallel: int, environ: Mapping[str, str]) -> dict[str, list[list[int]]]:
    """Device kind -> ``parallel`` disjoint device sets of this machine for ``groups``; UserError (one
    line) when the machine has room for fewer groups at once than ``parallel`` asks for."""
    free: dict[str, list[list[int]]] = {}
    for g in groups:
        if g.shape.device in free:
            continue
        have = machine_devices(g.shape.device, environ)
        widest = max(x.shape.per_node for x in groups if x.shape.device == g.shape.device)
        free[g.shape.device] = [s for s in slots(have, Shape(g.shape.device, widest), parallel) if len(s) >= widest]
        room = len(free[g.shape.device])
        if room < min(parallel, sum(x.shape.device == g.shape.device for x in groups)):
            what = "GPUs" if g.shape.device == "cuda" else "cores"
            raise UserError(f"--parallel {parallel}: this machine has {len(have)} {what}, room for {room} group(s) "
                            f"of {widest} at once; give --parallel {max(room, 1)} or fewer"
                            + ("" if room else " (or run the groups one after another, without --parallel)"))
    return free


class Pool:
    """Up to ``parallel`` groups at a time, each on a disjoint device set."""

    def __init__(self, groups: Sequence[Group], commands: dict[str, list[str]], parallel: int, logs: Path,
                 environ: Mapping[str, str] | None = None):
        self.environ = dict(os.environ if environ is None else environ)
        multi = [g.name for g in groups if g.shape.nnodes > 1]
        if multi:
            raise UserError(f"--parallel runs groups on this machine; {', '.join(multi)} spans nodes: "
                            f"run it with --launcher slurm or without --parallel")
        self.groups, self.commands, self.logs = list(groups), commands, logs
        self.free = device_slots(groups, parallel, self.environ)
        self.jobs = [Job(group=g.name, job_id=f"local-{n}", shape=g.shape.label,
                         log=str(logs / f"{g.name}.log")) for n, g in enumerate(groups, 1)]
        self.procs: dict[str, tuple[subprocess.Popen, list[int]]] = {}

    def _start(self, group: Group, job: Job, devices: list[int]) -> None:
        env = {**self.environ, **device_env(group.shape, devices[:group.shape.per_node]
                                            if group.shape.device == "cuda" else devices)}
        proc = spawn(self.commands[group.name], env, Path(job.log), inherit_env=False)
        self.procs[group.name] = (proc, devices)
        job.state, job.node = RUNNING, os.uname().nodename
        job.devices = {k: v for k, v in env.items() if k in ("CUDA_VISIBLE_DEVICES", "VLLM_CPU_OMP_THREADS_BIND")}
        job.start = time.strftime("%Y-%m-%dT%H:%M:%S")

    def step(self, ready: set[str]) -> bool:
        """Reap finished children, start what fits (groups named in ``ready`` only); True while work is left."""
        for name, (proc, devices) in list(self.procs.items()):
            code = proc.poll()
            if code is None:
                continue
            job = self.job(name)
            job.state, job.end = (DONE if code == 0 else FAILED), time.strftime("%Y-%m-%dT%H:%M:%S")
            if code:
                job.reason = f"exit code {code}"
            group = next(g for g in self.groups if g.name == name)
            self.free[group.shape.device].append(devices)
            del self.procs[name]
        for group, job in zip(self.groups, self.jobs):
            if job.state == PENDING and group.name in ready and self.free[group.shape.device]:
                self._start(group, job, self.free[group.shape.device].pop(0))
        return any(j.state in (PENDING, RUNNING) for j in self.jobs)

    def job(self, name: str) -> Job:
        return next(j for j in self.jobs if j.group == name)

    def cancel(self, grace_s: float = 30) -> None:
        """SIGTERM every running group (it stops its server), SIGKILL what is left after ``grace_s``."""
        stop_groups([proc for proc, _ in self.procs.values()], grace_s)
        for job in self.jobs:
            if job.state in (PENDING, RUNNING):
                job.state = CANCELLED

