"""A ``serve`` step: start a vLLM server (one node, or every node of a multi-node layout) and keep
it until its stop step or the end of the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama4spec.engine.args import base_url, engine_env, serve_argv, server_exec_argv
from llama4spec.config.layout import is_multinode, layout_problems
from llama4spec.multinode.plan import plan_nodes
from llama4spec.runbook import fields
from llama4spec.runbook.steps.failed import StepFailed
from llama4spec.runbook.spec import Traits
from llama4spec.runbook.steps.base import BaseKind
from llama4spec.serving.process import ServerError
from llama4spec.serving.watch import async_scheduling


@dataclass
class Keys:
    overrides: list[str] = fields.overrides()
    derive_from: list[str] = field(default_factory=list)  # generated: derive its schedule from these points
    log: Path | None = None  # not a runbook key: `llama4spec serve --log PATH` (multi-node: PATH's stem a directory)
    prune_from: list[str] = field(default_factory=list)  # generated: a sweep's points before it (skip_dominated)
    confidence: float = 0.95  # generated: of the bounds that may find it dominated (and of a revisit's decisions)
    revisit_of: list[str] = field(default_factory=list)  # generated: a revisit's points (started only if one is undecided)
    first_pass: list[str] = field(default_factory=list)  # generated: a revisit: every point of the sweep's first pass
    min_repeats: int = 2  # generated: a revisit: the sweep's rule
    max_repeats: int = 10
    slot: int | None = None  # generated: design: interleaved: which half of the devices (engine.devices.split)
    beside: str | None = None  # generated: design: interleaved: the serve step that stays up beside it


def plan(ctx, p) -> None:
    beside = ctx.planned.get(p.step.keys.beside) if p.step.keys.beside else None
    last = []
    if beside is not None and beside.composed is not None:  # up at the same time: the next port
        last = [f"serve.port={beside.composed.cfg.serve.port + 1}"]
    p.composed = ctx.compose(p.step.keys.overrides, p.id, last)
    if p.composed is None:
        return
    fill(p, ctx.runbook.env)
    if p.step.keys.slot is not None and (why := device_split(p).why):  # the devices changed since expansion
        ctx.report(p.id, [f"design: interleaved: {why}; run the sweep with design: sequential or give it more devices"])


def device_split(p):
    """An interleaved pair's device sets, from this process's devices (``engine.devices.split``)."""
    import os

    from llama4spec.engine.devices import split
    from llama4spec.runbook.groups import shape_of

    cfg = p.composed.cfg
    shape = shape_of(cfg)
    return split(shape.device, shape.per_node, cfg.hardware.devices_per_node, os.environ)


def fill(p, runbook_env: dict[str, str]) -> None:
    """The step's commands, environment and files from its composed config."""
    cfg = p.composed.cfg
    p.argv = serve_argv(cfg)
    p.exec_argv = server_exec_argv(cfg)
    p.env = {**runbook_env, **engine_env(cfg)}
    if p.step.keys.slot is not None:  # an interleaved pair: its half of the devices
        found = device_split(p)
        if found.why is None:
            from llama4spec.runbook.groups import shape_of

            p.env.update(found.env(p.step.keys.slot, shape_of(cfg).per_node))
    p.secret_env = {"VLLM_API_KEY": cfg.serve.api_key_env} if cfg.serve.api_key_env else {}
    p.url = base_url(cfg.serve.host, cfg.serve.port)
    log = p.step.keys.log
    p.artifacts = {"log": log or p.dir / "server.log", "config_file": p.dir / "config.yaml"}
    if is_multinode(cfg):  # the leader here, headless followers through the cluster's launcher
        if layout_problems(cfg):
            return  # validation has reported them (at planning)
        p.nodes = plan_nodes(cfg, extra_env=runbook_env)
        p.argv, p.exec_argv, p.env = p.nodes[0].argv, p.nodes[0].exec_argv, p.nodes[0].env
        logs_dir = log.with_suffix("") if log else p.dir
        logs = {f"log_node{n.rank}": logs_dir / f"node{n.rank}.log" for n in p.nodes[1:]}
        p.artifacts = {"log": logs_dir / "node0.log", **logs, "config_file": p.dir / "config.yaml"}


def node_logs(p) -> list:
    return [p.artifacts["log"], *(p.artifacts[f"log_node{n.rank}"] for n in p.nodes[1:])]


def server_for(p, secret_env: dict[str, str]):
    """The step's server, not started yet: ``Server`` or ``Nodes`` (one interface)."""
    cfg = p.composed.cfg
    name = f"server '{p.id}'"
    if p.nodes:  # every node started, watched and stopped together; a log per node
        from llama4spec.serving.nodes import Nodes

        return Nodes(p.nodes, host=cfg.serve.host, port=cfg.serve.port, log_paths=node_logs(p),
                     secret_env=secret_env, health_timeout_s=cfg.serve.health_timeout_s, name=name)
    from llama4spec.serving.server import Server

    return Server(p.exec_argv, host=cfg.serve.host, port=cfg.serve.port, log_path=p.artifacts["log"],
                  env={**p.env, **secret_env}, health_timeout_s=cfg.serve.health_timeout_s, name=name,
                  engine_nice=cfg.serve.engine_nice)


def derive_schedule(run, p) -> list[list[int]]:
    """A verification server's lookahead schedule, derived now from the points measured before it
    (a second phase of the sweep); its config, commands and record are rebuilt with it."""
    from llama4spec.config.compose import compose_config
    from llama4spec.config.schedule import schedule_problems
    from llama4spec.config.validate import validate
    from llama4spec.files import write_json
    from llama4spec.runbook.measured import collect_points
    from llama4spec.analysis.model import analyse
    from llama4spec.analysis.schedule import derive

    from llama4spec.runbook.noise_prior import hardware_prior

    draft = p.composed.cfg.draft.name
    points, missing = collect_points(run.plan, p.step.keys.derive_from)
    schedule = derive(analyse(points, hardware_prior(p.composed.cfg.hardware)), draft)
    if schedule is None or not schedule.speculates:
        why = "no speculation wins at any measured concurrency" if schedule else "no measured point of the draft"
        raise StepFailed(f"no lookahead schedule to verify for {draft}: {why} (missing: {', '.join(missing) or '-'})")
    found = schedule_problems(schedule.ranges, p.composed.cfg.lookahead)
    if found:
        raise StepFailed(f"the derived schedule {schedule.ranges} is not valid: {'; '.join(found)}")
    ranges = ",".join(f"[{a},{b},{k}]" for a, b, k in schedule.ranges)
    derived = [f"lookahead={schedule.lookahead}", f"draft.lookahead_schedule=[{ranges}]"]  # as deployed
    composed = compose_config([*p.composed.overrides, *derived])
    problems = validate(composed.cfg)
    if problems:
        raise StepFailed(f"the derived schedule's config is not valid: {'; '.join(problems)}")
    p.composed = composed
    for q in run.plan.steps:  # its benchmarks record the schedule's lookahead
        if q.step.server == p.id and q.step.traits.benchmarks and q.composed is not None:
            q.composed = compose_config([*q.composed.overrides, *derived])
    fill(p, run.plan.runbook.env)
    run.write_config(p)
    write_json(p.dir / "schedule.json", {"draft": draft, "schedule": schedule.ranges,
                                          "override": schedule.override(), "from_points": schedule.from_points,
                                          "missing": missing})
    run.say(f"      lookahead schedule derived from {len(points)} measured points: {schedule.ranges}")
    return schedule.ranges


def execute(run, p) -> dict[str, Any]:
    schedule = derive_schedule(run, p) if p.step.keys.derive_from else None
    server = server_for(p, run.secrets(p))
    run.progress.note(f"      starting; log: {server.log_path}")
    try:  # a spinner with the phase read from the log (-v: the log itself), nothing with -q
        with run.progress.activity(f"{p.id}: starting the server") as live:
            server.start(on_phase=live.phase, on_line=live.line)
    except ServerError as err:
        run.partial(p.id, {"pid": server.proc.pid if server.proc else None})
        raise StepFailed(str(err), err.log_tail) from None
    run.keep_server(p.id, server)
    ready = f"      ready at {server.url} after {server.ready_after_s:.0f} s"
    run.output.result(run, ready)  # the serve command shows it even with -q
    result = {"url": server.url, "ready_after_s": server.ready_after_s, "pid": server.proc.pid,
              "async_scheduling": async_scheduling(_text(server.log_path), p.exec_argv)}
    return {**result, "lookahead_schedule": schedule} if schedule else result


def _text(path) -> str:
    """The server's log so far (its first MiB: vLLM decides the scheduler at start-up)."""
    try:
        with open(path, "rb") as f:
            return f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return ""


def describe(p, say) -> None:
    if p.step.keys.derive_from:
        say(f"    lookahead schedule: derived at run time from points {', '.join(p.step.keys.derive_from)}, "
            f"validated before this server starts")
    for node in p.nodes[1:]:  # multi-node: the command above is the leader's, run here
        from llama4spec.engine.args import shell_line

        say(f"    {node.label}: {shell_line(node.argv)}")
        say(f"      runs as: {shell_line(node.exec_argv)}")


def _revisit_problem(plan, p) -> str | None:
    """A revisit server with nothing left to settle (or without the first pass's records, as in a
    launcher's group): not started, and why."""
    from llama4spec.runbook.sequential import Rule, revisit_targets

    keys = p.step.keys
    planned = {q.id for q in plan.steps}
    absent = [q for q in keys.first_pass if q not in planned]
    if absent:
        return (f"not revisited: this group does not hold the first pass's points ({', '.join(absent[:3])}"
                f"{', ...' if len(absent) > 3 else ''}); a revisit runs in the process that ran the first pass")
    from llama4spec.runbook.measured import measured_in_plan

    if not measured_in_plan(plan, list(keys.revisit_of)):
        return "not revisited: the first pass measured none of its points"
    rule = Rule(list(keys.revisit_of), [q for q in keys.first_pass if q not in keys.revisit_of],
                keys.min_repeats, keys.max_repeats, keys.confidence, start=2)
    try:
        targets = revisit_targets(plan, rule)
    except ValueError as err:  # records the rule cannot take: its settle step says so too
        return f"not revisited: {err}"
    if not targets & set(keys.revisit_of):
        return "not revisited: the first pass left none of its points undecided (below max_repeats)"
    return None


def missing_input(plan, p) -> str | None:
    """A sweep's larger lookahead that cannot win, from the points measured before it
    (``analysis.dominance``): not started, and the report says why. A revisit server whose points
    are all settled: not started either."""
    keys = p.step.keys
    if keys.revisit_of:
        return _revisit_problem(plan, p)
    if not keys.prune_from or p.composed is None:
        return None
    cfg = p.composed.cfg
    if not cfg.draft.method or cfg.draft.lookahead_schedule:
        return None
    from llama4spec.runbook.measured import measured_in_plan
    from llama4spec.runbook.noise_prior import hardware_prior
    from llama4spec.analysis.dominance import Measured, why_not
    from llama4spec.analysis.noise import pooled

    planned = {q.id for q in plan.steps}
    points = []
    measured = measured_in_plan(plan, [q for q in keys.prune_from if q in planned])
    noise = pooled(hardware_prior(cfg.hardware), {pid: m.record.samples("output_throughput") for pid, m in measured.items()},
                   {pid: m.record.sample_starts("output_throughput") for pid, m in measured.items()})
    for pid, m in measured.items():
        q = plan.get(pid)
        qc = q.composed.cfg
        acc = m.record.acceptance
        points.append(Measured(client=tuple(q.step.keys.overrides), draft=qc.draft.name if qc.draft.method else None,
                               lookahead=qc.lookahead if qc.draft.method else None,
                               throughputs=m.record.samples("output_throughput"),
                               drafts=acc.num_drafts if acc else 0, accepted_at=list(acc.accepted_per_pos) if acc else [],
                               acceptance_lengths=m.record.acceptance_samples()))
    return why_not(cfg.draft.name, cfg.lookahead, points, keys.confidence, noise)


KIND = BaseKind("serve", Keys, Traits(starts_engine=True, loads_models=True, serves=True, shows_env=True),
                plan, execute, describe, missing_input=missing_input)
