"""One server group run into its own run directory, ``<RUN_DIR>/groups/<name>/`` (``llama4spec run
RUNBOOK --only-group NAME --into RUN_DIR``): what a Slurm job or a ``--parallel`` slot runs.

The group's server takes a free port of the node it runs on; inside a Slurm job the group's
devices and hosts come from the allocation. ``job.json`` beside its records says where it ran.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from llama4spec.engine.devices import cpu_bind
from llama4spec.launch.devices import hostnames_inline, hosts_override, job_cpus
from llama4spec.files import plain, write_json
from llama4spec.runbook.groups import Group, find, group_dir, group_runbook, only_group, plan_groups, rebase
from llama4spec.runbook.plan import Plan, make_plan

JOB_RECORD = "job.json"


def free_port(host: str) -> int:
    """A port nothing listens on right now on this node's ``host`` interface."""
    with socket.socket() as s:
        s.bind((host if host not in ("0.0.0.0", "::") else "", 0))
        return s.getsockname()[1]


def recorded_port(run_dir: Path, group: str) -> int | None:
    """The port an earlier group's server used, from its plan.json."""
    from llama4spec.records.plan import plan_or_problem

    record, _ = plan_or_problem(group_dir(run_dir, group) / "plan.json")  # none, or damaged: a new port
    step = record.step(group) if record is not None else None
    url = step.url if step is not None else None
    try:
        port = int(url.rsplit(":", 1)[1].split("/")[0]) if isinstance(url, str) else None
    except (ValueError, IndexError):
        return None
    return port if port is not None and 1 <= port <= 65535 else None


def follower_task(environ: Mapping[str, str]) -> bool:
    """A task of a multi-node job on a node other than the first: the leader starts vLLM there
    itself (srun), so this task has nothing to do."""
    return environ.get("SLURM_PROCID", "0") != "0"


def scontrol(*args: str) -> str:
    try:
        return subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def slurm_hosts(environ: Mapping[str, str]) -> str | None:
    """The override listing the job's nodes as cluster.hosts, or None outside a Slurm job."""
    nodelist = environ.get("SLURM_JOB_NODELIST")
    if not nodelist:
        return None
    names = scontrol("show", "hostnames", nodelist).split() or hostnames_inline(nodelist)
    addresses = {}
    for name in names:
        try:
            addresses[name] = socket.gethostbyname(name)
        except OSError:
            addresses[name] = name
    return hosts_override(names, addresses)


def slurm_devices(group: Group, environ: Mapping[str, str]) -> dict[str, str]:
    """Inside a Slurm job on the CPU build: the job's cores as VLLM_CPU_OMP_THREADS_BIND (Slurm
    sets CUDA_VISIBLE_DEVICES for GPUs itself)."""
    if group.shape.device == "cuda" or "VLLM_CPU_OMP_THREADS_BIND" in environ or "SLURM_JOB_ID" not in environ:
        return {}
    cores = job_cpus(scontrol("show", "job", "-d", environ["SLURM_JOB_ID"]), socket.gethostname().split(".")[0])
    if len(cores) < group.shape.per_node:
        return {}
    return {"VLLM_CPU_OMP_THREADS_BIND": cpu_bind(cores, group.shape.per_node)}


def where(environ: Mapping[str, str]) -> dict[str, Any]:
    """Where this group runs: the Slurm job (if any), the node, the devices it was given."""
    job = environ.get("SLURM_JOB_ID")
    array = environ.get("SLURM_ARRAY_JOB_ID")
    return {
        "job_id": f"{array}_{environ.get('SLURM_ARRAY_TASK_ID')}" if array else job,
        "slurm_job_id": job,
        "node": socket.gethostname(),
        "nodes": environ.get("SLURM_JOB_NODELIST"),
        "devices": {k: environ[k] for k in ("CUDA_VISIBLE_DEVICES", "VLLM_CPU_OMP_THREADS_BIND") if k in environ},
    }


def needs_slurm_hosts(plan: Plan, name: str) -> bool:
    p = plan.get(name)
    return bool(p.composed and p.composed.cfg.cluster.hosts_from == "slurm" and p.composed.cfg.parallel.nnodes > 1)


def plan_only(path: Path, run_dir_for: Callable[[str], Path], name: str, overrides: list[str],
              repeats: int | str | None = None, warmup: int | None = None) -> Plan:
    """What a group's job plans before ``group_plan`` (``run RUNBOOK --only-group NAME``): the runbook
    read and its sweeps expanded (each sweep's servers composed: that is what names its groups), then
    only group ``name`` and the groups it derives from. When anything is wrong (a problem, no such
    group) the whole runbook is planned instead, so that the job says what ``run`` says."""
    from llama4spec.errors import UserError
    from llama4spec.runbook import steps as step_kinds
    from llama4spec.runbook.matrix import expand
    from llama4spec.runbook.plan import plan_file
    from llama4spec.runbook.schema import load, with_measurement

    runbook, problems = load(path)
    if runbook is not None and not problems:
        runbook = with_measurement(runbook, repeats, warmup)
        expanded = expand(runbook, list(overrides), problems, step_kinds.make)  # as make_plan expands it
        cut = None if problems else only_group(expanded, name)
        if cut is not None:
            try:
                return make_plan(cut, run_dir_for(runbook.name), overrides)
            except UserError:
                pass
    return plan_file(path, run_dir_for, overrides, repeats=repeats, warmup=warmup)


def group_plan(plan: Plan, run_dir: Path, name: str, overrides: list[str], port: int) -> tuple[Plan, Group]:
    """The plan of group ``name`` alone, into its own directory; the groups it derives its schedule
    from are in it with their records where they lie (already measured, so skipped)."""
    groups = plan_groups(plan)
    group = find(groups, name)
    ports = {a: recorded_port(run_dir, a) for a in group.after}
    runbook = group_runbook(plan.runbook, groups, name, port, {a: p for a, p in ports.items() if p})
    into = group_dir(run_dir, name)
    sub = make_plan(runbook, into, overrides)
    by_name = {g.name: g for g in groups}
    for a in group.after:
        for sid in by_name[a].steps:
            rebase(sub.get(sid), into, group_dir(run_dir, a))
    return sub, group


def record(run_dir: Path, name: str, data: dict[str, Any]) -> None:
    """job.json of group ``name``, checked through its model (``records.job``) first."""
    from llama4spec.records.job import checked

    path = group_dir(run_dir, name) / JOB_RECORD
    checked(data, plain(str(path)))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, data)


def stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
