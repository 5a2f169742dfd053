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
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from rich.console import Console

from llama4spec.errors import UserError
from llama4spec.launch import job_table as render
from llama4spec.launch.options import RunOptions
from llama4spec.runbook.rundir import is_step_id

POLL_S = 2.0
CANCEL_WAIT_S = 60.0


@dataclass(frozen=True)
class Here:
    """What the submitting side takes from its caller: where it prints, the doctor's gate for
    every engine step (``check(composed, step_id)``), and whether to keep quiet (-q)."""

    console: Console
    check: Callable[[Any, str], None]
    quiet: bool = False


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


def measure(opts: RunOptions) -> dict[str, Any]:
    """The measurement options of ``run`` that are set, to pass on as given."""
    return {k: getattr(opts, k) for k in ("repeats", "warmup") if getattr(opts, k, None) is not None}


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
def _stop_args(opts: RunOptions) -> dict[str, Any]:
    return {"stop_on_error": True} if opts.stop_on_error else {}


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
        code = execute.run(sub, here.console, gate=here.check, resume=resume, **_stop_args(opts))
    finally:
        one.record(plan.run_dir, name, {**info, "finished": one.stamp(), "exit": code,
                                        "status": "done" if code == 0 else "failed" if code == 1 else "interrupted"})
    return code


# -- every group, elsewhere ---------------------------------------------------------------------
def command(opts: RunOptions, runbook: Path, run_dir: Path, name: str) -> list[str]:
    """What a job or a slot runs for group ``name`` (no secrets: the job's environment carries them)."""
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []  # never a llama4spec/ of the working directory
    argv = [sys.executable, *safe_path, "-m", "llama4spec", "run", str(runbook.resolve()), *opts.overrides,
            "--only-group", name, "--into", str(run_dir.resolve())]
    for k, v in measure(opts).items():
        argv += [f"--{k}", str(v)]
    return argv + (["--force"] if opts.force else []) + (["--stop-on-error"] if _stop_args(opts) else [])


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


def write_records(plan, status: dict[str, Any]) -> None:
    """The submitting side's records: runbook.yaml, plan.json (the whole plan) and status.json (with
    the jobs), through the run's one recorder."""
    from llama4spec.results.provenance import plan_secrets
    from llama4spec.runbook.recorder import Recorder
    from llama4spec.runbook.rundir import STATUS

    records = Recorder(plan.run_dir, plan_secrets(plan))
    records.start(plan, plan.source_text())
    records.json(STATUS, status)


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
    from llama4spec.launch import jobs as J
    from llama4spec.runbook.groups import plan_groups, waves
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
    run_dir = plan.run_dir
    if run_local_steps(opts, plan, here):
        raise UserError(f"a step run before the groups failed; see {run_dir / 'summary.md'}")
    from llama4spec.runbook.rundir import read_status

    from llama4spec.records.status import checked

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
                f"`llama4spec report {run_dir}` once they are done, cancel them with `llama4spec cancel {run_dir}`")
            return 0
        wait(launcher, kept, plan, status, here)
    except BaseException:
        launcher.cancel()
        status.update(status="cancelled", finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                      jobs=[j.to_record() for j in [*kept, *launcher.jobs]])
        write_records(plan, status)
        render.jobs(here.console, [*kept, *launcher.jobs])
        render.say(here.console, f"cancelled: {', '.join(launcher.ids()) or 'nothing was running'}", "yellow")
        raise
    return finish(plan, status, [*kept, *launcher.jobs], use_slurm, here)


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


def sequential_sweeps(plan, groups, at_once: bool) -> list[str]:
    """A note for each sequential sweep whose servers become several groups that may run at once:
    its points may then be compared across different co-location (named by the report)."""
    if not at_once:
        return []
    group_of = {sid: g.name for g in groups for sid in g.steps}
    out = []
    for p in plan.steps:
        if not p.step.traits.expands or p.step.kind_of.plan_record(p.step)["design"]["design"] != "sequential":
            continue
        held = p.step.expanded if p.step.expanded is not None else p.step.keys  # a sweep's SweepPlan, capacity's keys
        mine = {group_of[b] for b in held.points if b in group_of}
        if len(mine) > 1:
            out.append(f"note: sweep '{p.id}' measures its {len(mine)} servers as separate groups, which may run "
                       f"beside each other; the report names points compared across different co-location. "
                       f"design: interleaved (with repeats: N) keeps no speculation beside each candidate in "
                       f"one group")
    return out


def show_groups(plan, groups, use_slurm: bool, opts: RunOptions, console: Console) -> None:
    """The dry run's last part: the groups, what each asks for, when it may start, how it runs."""
    from rich.table import Table
    from rich.text import Text

    from llama4spec.runbook.groups import local_steps, merge_steps, waves

    wave_of = {g.name: n for n, wave in enumerate(waves(groups), 1) for g in wave}
    how = "Slurm jobs (one array per shape)" if use_slurm else f"up to {opts.parallel or 1} at once here"
    t = Table(title=f"{len(groups)} server groups, as {how}", title_justify="left")
    for column in ("group", "steps", "asks for", "wave", "after"):
        t.add_column(column)
    for g in groups:
        t.add_row(Text(g.name), str(len(g.steps)), Text(g.shape.label), str(wave_of[g.name]),
                  Text(", ".join(g.after) or "-"))
    console.print(t)
    if use_slurm:
        from llama4spec.launch.slurm import parameters

        seen = set()
        for g in groups:
            if g.shape in seen:
                continue
            seen.add(g.shape)
            params = parameters(plan.get(g.name).composed.cfg.cluster.slurm, g.shape, f"l4s-{plan.runbook.name}",
                                sum(x.shape == g.shape for x in groups))
            render.say(console, f"submitit parameters for {g.shape.label}: " + ", ".join(f"{k}={v}" for k, v in params.items()))
    for line in sequential_sweeps(plan, groups, use_slurm or (opts.parallel or 1) > 1):
        render.say(console, line)
    here, merged = local_steps(plan), merge_steps(plan)
    if here:
        render.say(console, f"run here before the groups: {', '.join(here)}")
    if merged:
        render.say(console, f"when results merge (llama4spec report): {', '.join(merged)}")
    import shlex

    argv = command(opts, plan.runbook.path, plan.run_dir, groups[0].name)
    render.say(console, f"each group runs: {shlex.join(['llama4spec', *argv[argv.index('run'):]])}")
