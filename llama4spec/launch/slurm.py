"""Server groups as Slurm jobs through submitit: one job array per resource shape, each task
running ``llama4spec run RUNBOOK --only-group G --into RUN_DIR`` (submitit's CommandFunction: a
command, never a pickled plan). submitit writes what it pickles (that command) into the run
directory's ``slurm/`` folder on shared disk; secrets travel only in the job's environment
(sbatch exports the submitting environment).

States come from ``scontrol show job`` (it answers for pending, running and recently ended jobs
without accounting storage), then from the group's own records.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any, Sequence

from llama4spec.errors import UserError
from llama4spec.launch.jobs import CANCELLED, DONE, FAILED, PENDING, RUNNING, Job
from llama4spec.runbook.groups import Group, Shape

STATES = {
    "PENDING": PENDING, "REQUEUED": PENDING, "CONFIGURING": RUNNING, "RUNNING": RUNNING, "COMPLETING": RUNNING,
    "SUSPENDED": RUNNING, "COMPLETED": DONE, "CANCELLED": CANCELLED, "FAILED": FAILED, "TIMEOUT": FAILED,
    "NODE_FAIL": FAILED, "OUT_OF_MEMORY": FAILED, "BOOT_FAIL": FAILED, "DEADLINE": FAILED, "PREEMPTED": FAILED,
}
FIELD = re.compile(r"(\w+)=(\S*)")
JOB_ID = re.compile(r"[0-9]{1,12}(_[0-9]{1,9})?")  # JOB or ARRAY_TASK, as submitit reports them


def parameters(slurm, shape: Shape, name: str, count: int, dependency: str | None = None) -> dict[str, Any]:
    """submitit's parameters for an array of ``count`` groups of ``shape`` (pure)."""
    params: dict[str, Any] = {"name": name, "timeout_min": int(slurm.time_min), "nodes": shape.nnodes,
                              "tasks_per_node": 1, "slurm_array_parallelism": max(1, count)}
    if shape.device == "cuda":
        params["gpus_per_node"] = shape.per_node
        if slurm.cpus_per_device:
            params["cpus_per_task"] = shape.per_node * int(slurm.cpus_per_device)
    else:  # the CPU build: one core per rank
        params["cpus_per_task"] = shape.per_node
    if slurm.partition:
        params["slurm_partition"] = str(slurm.partition)
    if slurm.account:
        params["slurm_account"] = str(slurm.account)
    if slurm.mem_gb:
        params["mem_gb"] = int(slurm.mem_gb)
    additional = {str(k): str(v) for k, v in dict(slurm.additional or {}).items()}
    if dependency:
        additional["dependency"] = dependency
    if additional:
        params["slurm_additional_parameters"] = additional
    return params


def available() -> str | None:
    """Why Slurm cannot take jobs from here, or None."""
    try:
        done = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as err:
        return f"no Slurm client here ({err.__class__.__name__}: sinfo); run on a login node of the cluster"
    if done.returncode:
        return f"Slurm does not answer: {(done.stderr or done.stdout).strip().splitlines()[-1:] or ['sinfo failed']}"
    return None


def submit(groups: Sequence[Group], commands: dict[str, list[str]], slurm, folder: Path, name: str, cwd: Path,
           dependency: str | None = None) -> list[Job]:
    """Submit ``groups`` as arrays (one per distinct shape); their jobs, pending."""
    import submitit

    jobs: list[Job] = []
    by_shape: dict[Shape, list[Group]] = {}
    for g in groups:
        by_shape.setdefault(g.shape, []).append(g)
    for shape, members in by_shape.items():
        executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
        executor.update_parameters(**parameters(slurm, shape, name, len(members), dependency))
        try:
            with executor.batch():
                submitted = [executor.submit(submitit.helpers.CommandFunction(commands[g.name], cwd=str(cwd)))
                             for g in members]
        except Exception as err:  # sbatch refused (partition, account, resources): its own words
            raise UserError(f"Slurm refused the jobs for {shape.label}: {str(err).strip().splitlines()[-1]}")
        for g, job in zip(members, submitted):
            jobs.append(Job(group=g.name, job_id=str(job.job_id), shape=shape.label,
                            log=str(job.paths.stdout), err_log=str(job.paths.stderr)))
    return jobs


def array_ids(jobs: Sequence[Job]) -> list[str]:
    return list(dict.fromkeys(j.job_id.split("_")[0] for j in jobs))


def parse_show_job(text: str) -> dict[str, dict[str, str]]:
    """``scontrol -o show job`` lines -> task id (ARRAY_TASK, or the job id) -> its fields. A
    pending array not yet split into tasks (ArrayTaskId=0-3) gives every task."""
    from llama4spec.engine.devices import expand_ranges

    found: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        fields = dict(FIELD.findall(line))
        if "JobId" not in fields:
            continue
        array, task = fields.get("ArrayJobId"), fields.get("ArrayTaskId")
        if array and task:
            for t in expand_ranges(task.split("%")[0]):
                found[f"{array}_{t}"] = fields
        else:
            found[fields["JobId"]] = fields
    return found


def refresh(jobs: Sequence[Job]) -> None:
    """Each job's state, node and times from scontrol (those scontrol no longer knows keep theirs)."""
    for array in array_ids(jobs):
        try:
            text = subprocess.run(["scontrol", "-o", "show", "job", array], capture_output=True, text=True,
                                  timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        known = parse_show_job(text)
        for job in jobs:
            fields = known.get(job.job_id)
            if not fields:
                continue
            job.state = STATES.get(fields.get("JobState", ""), job.state)
            if fields.get("NodeList") not in (None, "", "(null)"):
                job.node = fields["NodeList"]
            for key, attr in (("StartTime", "start"), ("EndTime", "end")):
                value = fields.get(key)
                if value and value not in ("Unknown", "None") and job.state != PENDING:
                    if attr == "end" and job.state == RUNNING:
                        continue  # a running job's EndTime is its time limit
                    setattr(job, attr, value)
            if job.state == FAILED and fields.get("Reason") not in (None, "None"):
                job.reason = fields.get("Reason")


def job_id_problem(job_id: str) -> str | None:
    """Why ``job_id`` is not a Slurm job id (``JOB`` or ``ARRAY_TASK``: digits), or None."""
    if JOB_ID.fullmatch(job_id):
        return None
    return f"job id {job_id[:40]!r} is not a Slurm job id (digits, or ARRAY_TASK such as 12_0)"


def cancel(jobs: Sequence[Job]) -> list[str]:
    """scancel every array of ``jobs``; the ids cancelled. Every id is checked against Slurm's job id
    grammar first (an id read back such as ``--me`` never reaches scancel); UserError when one is not
    an id, or when scancel fails (its own words)."""
    bad = [p for j in jobs if (p := job_id_problem(j.job_id))]
    if bad:
        raise UserError(f"{bad[0]}; nothing was cancelled (the run's records are not ones this tool wrote)")
    ids = array_ids(jobs)
    if not ids:
        return ids
    try:
        done = subprocess.run(["scancel", *ids], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as err:
        raise UserError(f"scancel {' '.join(ids)} could not run ({type(err).__name__}: {err}); run it on a login node "
                        f"of the cluster") from None
    if done.returncode:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise UserError(f"scancel {' '.join(ids)} failed (exit {done.returncode}"
                        f"{': ' + said[-1][:300] if said else ''}); the jobs may still run: check with squeue")
    return ids
