"""A ``serve`` step: start a vLLM server (one node, or every node of a multi-node layout) and keep
it until its stop step or the end of the run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama4spec.engine.args import base_url, engine_env, serve_argv, server_exec_argv
from llama4spec.config.layout import is_multinode, layout_problems
from llama4spec.cost.model import NONE, Seen, Work, devices
from llama4spec.multinode.plan import plan_nodes
from llama4spec.runbook import fields
from llama4spec.runbook.steps.failed import StepFailed
from llama4spec.runbook.spec import Traits
from llama4spec.runbook.steps.base import BaseKind
from llama4spec.serving.process import ServerError
from llama4spec.serving.watch import async_scheduling


class Gate:
    """What the feature that generated a server decides about it at run time (a sweep's:
    ``sweep.gates``); by default nothing."""

    def may_skip(self, p, before) -> bool:
        """Whether it may leave the server unstarted (then the least cost counts no start);
        ``before``: the steps planned before it (``cost.model.Seen``)."""
        return True

    def missing_input(self, plan, p) -> str | None:
        """Why the server must not start now (None: it starts)."""
        return None

    def before_start(self, run, p) -> dict[str, Any]:
        """What it settles before the server starts (its config may change), for the step's record."""
        return {}

    def describe(self, p, say) -> None:
        """The dry run's lines for it."""


@dataclass
class Keys:
    overrides: list[str] = fields.overrides()
    log: Path | None = None  # not a runbook key: `llama4spec serve --log PATH` (multi-node: PATH's stem a directory)
    gate: Gate | None = None  # generated: what the feature that made it decides about it (``Gate``)
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


def execute(run, p) -> dict[str, Any]:
    gate = p.step.keys.gate
    settled = gate.before_start(run, p) if gate is not None else {}
    server = run.server(p.id)
    if server is not None and server.alive():  # started together with the server it is beside
        run.output.result(run, f"      ready at {server.url} after {server.ready_after_s:.0f} s (started together "
                               f"with {p.step.keys.beside})")
        return {**_started(server, p), "started_with": p.step.keys.beside, **settled}
    server = server_for(p, run.secrets(p))
    run.progress.note(f"      starting; log: {server.log_path}")
    partner = _partner(run, p)
    together = _start_beside(run, partner) if partner is not None else None
    try:  # a spinner with the phase read from the log (-v: the log itself), nothing with -q
        with run.progress.activity(f"{p.id}: starting the server") as live:
            server.start(on_phase=live.phase, on_line=live.line)
    except ServerError as err:
        _abandon(together)
        run.partial(p.id, {"pid": server.proc.pid if server.proc else None})
        raise StepFailed(str(err), err.log_tail) from None
    except BaseException:
        _abandon(together)
        raise
    run.keep_server(p.id, server)
    if together is not None:
        try:
            _join(run, partner, together)
        except BaseException:  # interrupted while waiting: the partner's stopped too
            _abandon(together)
            raise
    ready = f"      ready at {server.url} after {server.ready_after_s:.0f} s"
    run.output.result(run, ready)  # the serve command shows it even with -q
    return {**_started(server, p), **settled}


def _started(server, p) -> dict[str, Any]:
    return {"url": server.url, "ready_after_s": server.ready_after_s, "pid": server.proc.pid,
            "async_scheduling": async_scheduling(_text(server.log_path), p.exec_argv)}


def _partner(run, p):
    """The serve step to start together with this one: the step right after it, a server started
    beside it (back-to-back blocks) with no gate of its own; None where there is none, or either
    spans nodes."""
    steps = run.plan.steps
    at = next((i for i, q in enumerate(steps) if q.id == p.id), None)
    q = steps[at + 1] if at is not None and at + 1 < len(steps) else None
    if q is None or not q.step.traits.serves or getattr(q.step.keys, "beside", None) != p.id \
            or q.step.keys.gate is not None:
        return None
    return q if q.composed is not None and not p.nodes and not q.nodes else None


@dataclass
class _Together:
    """A partner's server starting on a thread of its own, and how it ended (``error``)."""

    server: Any
    thread: Any
    error: BaseException | None = None


def _start_beside(run, q) -> _Together:
    """``q``'s server launched now and waited for on a thread while this step's starts: the two
    starts overlap (their devices are apart), so a block's two servers are up after one start's
    wait, not two."""
    import threading

    together = _Together(server_for(q, run.secrets(q)), None)
    try:
        together.server.launch()  # here: a tethered process ends with the thread that spawned it
    except Exception as err:  # its own step says so when it runs (it starts again there)
        together.error = err

    def start() -> None:
        if together.error is not None:
            return
        try:
            together.server.wait_ready()
        except BaseException as err:
            together.error = err

    together.thread = threading.Thread(target=start, name=f"start {q.id}", daemon=True)
    together.thread.start()
    return together


def _join(run, q, together: _Together) -> None:
    """The partner's start waited for: kept as ``q``'s server when it is up (its step then finds it)."""
    together.thread.join()
    if together.error is None and together.server.alive():
        run.keep_server(q.id, together.server)
    else:
        together.server.stop()


def _abandon(together: _Together | None) -> None:
    """This step's start failed or was interrupted: the partner's stopped too."""
    if together is not None:
        together.server.stop()
        together.thread.join(timeout=30)
        together.server.stop()  # spawned after the first stop: stopped now


def _text(path) -> str:
    """The server's log so far (its first MiB: vLLM decides the scheduler at start-up)."""
    try:
        with open(path, "rb") as f:
            return f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return ""


def describe(p, say) -> None:
    if p.composed is not None:
        from llama4spec.engine.args import prefix_caching_words

        say(f"    prefix caching: {prefix_caching_words(p.composed.cfg)}")
    if p.step.keys.gate is not None:
        p.step.keys.gate.describe(p, say)
    for node in p.nodes[1:]:  # multi-node: the command above is the leader's, run here
        from llama4spec.engine.args import shell_line

        say(f"    {node.label}: {shell_line(node.argv)}")
        say(f"      runs as: {shell_line(node.exec_argv)}")


def missing_input(plan, p) -> str | None:
    """Why the server must not start now: its gate's word (``Gate``; None without one)."""
    gate = p.step.keys.gate
    return gate.missing_input(plan, p) if gate is not None else None


def work(p, before: Seen) -> Work:
    """One server start; none at the least where its gate may leave it unstarted (a sweep's further
    block, a dominated lookahead, a revisit), or the server it starts beside may."""
    if p.composed is None:
        return NONE
    keys = p.step.keys
    partner = before.work_of(keys.beside) if keys.beside else None
    optional = (keys.gate is not None and keys.gate.may_skip(p, before)) or (partner is not None and partner.starts[0] == 0)
    return Work(starts=(0 if optional else 1, 1), devices=devices(p.composed.cfg), holds=True,
                beside=partner is not None)


KIND = BaseKind("serve", Keys, Traits(starts_engine=True, loads_models=True, serves=True, shows_env=True),
                plan, execute, describe, missing_input=missing_input, work=work)
