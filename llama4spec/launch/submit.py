"""Running server groups: one here (``--only-group``, ``--shard``), several at once on this
machine (``--parallel N``), or every group as a Slurm job (``--launcher slurm``, or a cluster preset
with ``slurm.submit: true``). The submitting side plans and checks everything once (validation,
doctor, memory plan) before anything starts, runs fetch and offline steps itself, then the groups;
compare and sweep reports come from ``llama4spec report`` when results merge.

    <RUN_DIR>/            runbook.yaml, plan.json (the whole plan), status.json (with "jobs")
      groups/<group>/     each group's own run directory (status.json, plan.json, job.json, steps)
      slurm/              submitit's folder: the submitted command, the jobs' logs
      logs/<group>.log    --parallel: each group's output

What it shows goes to the caller's console through ``launch.job_table``; the doctor's gate comes
from the caller (``Here``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from llama4spec.errors import UserError
from llama4spec.launch import job_table as render
from llama4spec.launch.finish import finish
from llama4spec.launch.here import Here, command, measure, stop_args, write_records
from llama4spec.launch.launchers import Launcher, LocalRun, SlurmRun, wait
from llama4spec.launch.options import RunOptions
from llama4spec.launch.show import show_groups
from llama4spec.runbook.rundir import is_step_id

def validate_options(opts: RunOptions) -> None:
    if opts.only_group and opts.shard:
        raise UserError("--only-group and --shard exclude each other; give one")
    if opts.only_group is not None and not is_step_id(opts.only_group):
        raise UserError(f"--only-group {opts.only_group[:80]!r}: not a server group's name (a serve step's id: "
                        f"a letter, then letters, digits, _ and -); `run RUNBOOK --parallel 2 --dry-run` lists them")
    if opts.into is not None and (opts.into.exists() or opts.into.is_symlink()) and not opts.into.is_dir():
        raise UserError(f"--into {opts.into}: is a file, not a run directory; give the run directory the "
                        f"launcher printed (runs/<runbook>/<timestamp>)")
    if opts.parallel is not None and opts.parallel < 1:
        raise UserError(f"--parallel {opts.parallel}: give a number of groups, 1 or more")
    if opts.into is not None and not (opts.only_group or opts.shard):
        raise UserError("--into names the run directory of --only-group or --shard; give one of them, or drop --into")
    if opts.into is not None and opts.resume is not None:
        raise UserError("--into and --resume both name the run directory; give one")
    if (opts.only_group or opts.shard) and (opts.parallel or opts.launcher == "slurm" or opts.detach):
        raise UserError("--only-group/--shard run groups here, one after another; drop --parallel, "
                        "--launcher slurm and --detach (the launcher itself runs --only-group)")
    if opts.detach and opts.launcher != "slurm":
        raise UserError("--detach needs --launcher slurm (groups run here stop when this command ends)")
    if opts.parallel and opts.parallel > 1 and opts.launcher == "slurm":
        raise UserError("--parallel is for one machine; under --launcher slurm every group is its own job")
    if opts.shard:
        from llama4spec.runbook.groups import parse_shard

        parse_shard(opts.shard)


def submits(plan) -> bool:
    """The runbook asks for Slurm: a server's cluster preset has slurm.submit."""
    return any(p.step.traits.serves and p.composed is not None and p.composed.cfg.cluster.slurm.submit
               for p in plan.steps)


def launched(opts: RunOptions, plan) -> bool:
    """Whether ``run`` hands this plan to a launcher instead of running it step by step here."""
    return bool(opts.only_group or opts.shard or (opts.parallel or 1) > 1 or opts.launcher == "slurm"
                or (opts.launcher is None and submits(plan)))


def run_launched(opts: RunOptions, plan, here: Here) -> int:
    if opts.only_group or opts.shard:
        from llama4spec.runbook.groups import parse_shard, plan_groups, shard

        names = [opts.only_group] if opts.only_group else [
            g.name for g in shard(plan_groups(plan), *parse_shard(opts.shard))]
        code = 0
        for name in names:
            code = max(code, run_group(opts, plan, name, here))
        return code
    return submit(opts, plan, here)


# -- one group, here ----------------------------------------------------------------------------
def _replan(opts: RunOptions, run_dir: Path, overrides: list[str]):
    from llama4spec.runbook.plan import plan_file

    return plan_file(opts.runbook, lambda name: run_dir, overrides, **measure(opts))


def run_group(opts: RunOptions, plan, name: str, here: Here) -> int:
    """Group ``name`` into ``<RUN_DIR>/groups/<name>/``, on a free port, with job.json saying where."""
    from llama4spec.launch import group as one
    from llama4spec.runbook import execute
    from llama4spec.runbook.groups import find, group_dir, plan_groups
    from llama4spec.runbook.render import plan_text
    from llama4spec.runbook.rundir import STATUS

    if one.follower_task(os.environ):  # a multi-node job's other nodes: the leader starts vLLM there
        return 0
    find(plan_groups(plan), name)
    overrides = list(opts.overrides)
    if one.needs_slurm_hosts(plan, name):
        hosts = one.slurm_hosts(os.environ)
        if hosts:
            overrides.append(hosts)
            plan = _replan(opts, plan.run_dir, overrides)
    host = plan.get(name).composed.cfg.serve.host
    sub, group = one.group_plan(plan, plan.run_dir, name, overrides, one.free_port(host))
    if opts.dry_run:
        plan_text(here.console, sub)
        return 0
    os.environ.update(one.slurm_devices(group, os.environ))
    info = {"group": name, **one.where(os.environ), "started": one.stamp(), "status": "running"}
    one.record(plan.run_dir, name, info)
    resume = (group_dir(plan.run_dir, name) / STATUS).is_file() or bool(group.after)
    code = 130
    try:
        code = execute.run(sub, here.console, gate=here.check, resume=resume, **stop_args(opts))
    finally:
        one.record(plan.run_dir, name, {**info, "finished": one.stamp(), "exit": code,
                                        "status": "done" if code == 0 else "failed" if code == 1 else "interrupted"})
    return code


# -- every group, elsewhere ---------------------------------------------------------------------
def refuse_secret_overrides(opts: RunOptions) -> None:
    """A job's command is written to shared disk: an override holding a secret may not go there."""
    from llama4spec.engine.secrets import redact

    secret = [o for o in opts.overrides if redact(o) != o]
    if secret:
        raise UserError(*(f"override '{redact(o)}' holds a secret, and a job's command is written to shared disk; "
                          f"export it and name the variable instead (e.g. serve.api_key_env=MY_KEY)" for o in secret))


def preflight_here(plan, here: Here) -> None:
    """Validation is done (planning); the doctor and memory plan of every engine step, once, here;
    the tiny models built once, before any job could race to build them."""
    refused: list[str] = []
    check = here.check
    for p in plan.steps:
        if p.step.traits.starts_engine and p.composed is not None:
            try:
                check(p.composed, p.id)
            except UserError as err:
                refused += [f"step '{p.id}': {line}" for line in err.problems]
    if refused:
        raise UserError(*refused)
    from llama4spec.tiny.build import ensure_for

    for p in plan.steps:
        if p.composed is not None:
            ensure_for(p.composed.cfg)


def run_local_steps(opts: RunOptions, plan, here: Here) -> int:
    """Fetch, offline and url benches: run here before the groups, recorded in the run directory."""
    from llama4spec.runbook import execute
    from llama4spec.runbook.groups import local_steps
    from llama4spec.runbook.plan import Plan

    ids = local_steps(plan)
    if not ids:
        return 0
    sub = Plan(runbook=plan.runbook, run_dir=plan.run_dir, overrides=plan.overrides,
               steps=[p for p in plan.steps if p.id in ids], source=plan.source)
    return execute.run(sub, here.console, gate=here.check, resume=opts.resume is not None)


def submit(opts: RunOptions, plan, here: Here) -> int:
    """Every group elsewhere: as Slurm jobs, or up to --parallel at once here; then the merged report."""
    from llama4spec.runbook.groups import plan_groups
    from llama4spec.runbook.render import plan_text

    groups = plan_groups(plan)
    if not groups:
        raise UserError("the runbook has no serve step, so no server group to hand out; run it without "
                        "--parallel or --launcher slurm")
    use_slurm = opts.launcher == "slurm" or (opts.launcher is None and submits(plan))
    if not use_slurm and (opts.parallel or 1) > 1:  # devices for that many groups at once: checked before anything
        from llama4spec.launch.local import device_slots

        device_slots([g for g in groups if g.shape.nnodes == 1], opts.parallel, os.environ)
    if opts.dry_run:
        plan_text(here.console, plan)
        show_groups(plan, groups, use_slurm, opts, here.console)
        return 0
    refuse_secret_overrides(opts)
    if use_slurm:
        from llama4spec.launch import slurm

        why = slurm.available()
        if why:
            raise UserError(f"--launcher slurm: {why}")
    preflight_here(plan, here)
    if run_local_steps(opts, plan, here):
        raise UserError(f"a step run before the groups failed; see {plan.run_dir / 'summary.md'}")
    return _launch(opts, plan, groups, use_slurm, here)


def _launch(opts: RunOptions, plan, groups, use_slurm: bool, here: Here) -> int:
    """The groups not yet done, started and followed (or left running with --detach)."""
    from llama4spec.launch import jobs as J
    from llama4spec.records.status import checked
    from llama4spec.runbook.groups import waves
    from llama4spec.runbook.rundir import read_status

    run_dir = plan.run_dir
    earlier = read_status(run_dir) if opts.resume is not None else None  # read through its model
    old_jobs = {j.group: J.Job.from_entry(j) for j in checked(earlier, str(run_dir)).jobs} if earlier else {}
    finished = {g.name for g in groups if J.group_status(run_dir, g.name) == "done"}
    todo = [g for g in groups if g.name not in finished]
    status: dict[str, Any] = {
        "runbook": plan.runbook.name, "runbook_path": str(plan.runbook.path), "run_dir": str(run_dir),
        "overrides": plan.overrides, "launcher": "slurm" if use_slurm else f"local --parallel {opts.parallel or 1}",
        "status": "running", "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "groups": [g.name for g in groups], "jobs": [],
    }
    kept = [old_jobs.get(name) or J.Job(group=name, job_id="-", shape="-", state=J.DONE) for name in sorted(finished)]
    for job in kept:
        job.state = J.DONE
    write_records(plan, status)
    render.say(here.console, f"run record: {run_dir}")
    if finished:
        render.say(here.console, f"already measured in this run directory: {', '.join(sorted(finished))}")
    runbook = (run_dir / "runbook.yaml") if plan.source is not None else plan.runbook.path
    commands = {g.name: command(opts, runbook, run_dir, g.name) for g in todo}
    if use_slurm:
        launcher: Launcher = SlurmRun(plan, todo, commands, waves(todo))
    else:
        from llama4spec.launch.local import Pool

        launcher = LocalRun(Pool(todo, commands, opts.parallel or 1, run_dir / "logs"), todo)
    if _follow(opts, launcher, kept, plan, status, here):
        return 0
    return finish(plan, status, [*kept, *launcher.jobs], use_slurm, here)


def _follow(opts: RunOptions, launcher: Launcher, kept, plan, status: dict[str, Any], here: Here) -> bool:
    """Start the jobs and wait for them (cancelled on any interruption); True when --detach left them."""
    try:
        started = time.monotonic()
        launcher.start()
        status["submit_seconds"] = round(time.monotonic() - started, 3)
        status["jobs"] = [j.to_record() for j in [*kept, *launcher.jobs]]
        write_records(plan, status)
        if opts.detach:
            status["status"] = "submitted"
            write_records(plan, status)
            render.jobs(here.console, [*kept, *launcher.jobs])
            render.say(here.console, f"submitted {len(launcher.jobs)} jobs; follow them with squeue, merge the results with "
                f"`llama4spec report {plan.run_dir}` once they are done, cancel them with "
                f"`llama4spec cancel {plan.run_dir}`")
            return True
        wait(launcher, kept, plan, status, here)
    except BaseException:
        launcher.cancel()
        status.update(status="cancelled", finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                      jobs=[j.to_record() for j in [*kept, *launcher.jobs]])
        write_records(plan, status)
        render.jobs(here.console, [*kept, *launcher.jobs])
        render.say(here.console, f"cancelled: {', '.join(launcher.ids()) or 'nothing was running'}", "yellow")
        raise
    return False
