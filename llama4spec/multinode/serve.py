"""``llama4spec serve`` and runbook ``serve`` steps for layouts that span nodes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Mapping

from rich.console import Console

from llama4spec.config.compose import Composed
from llama4spec.config.schema import Config
from llama4spec.errors import UserError
from llama4spec.multinode.plan import NodeCommand, dry_run_lines, is_multinode, plan_nodes, problems

__all__ = ["is_multinode", "prepare", "start_nodes", "log_paths", "serve_multinode", "plan_serve_step", "step_logs"]


def prepare(cfg: Config, vllm_cli: bool | None = None) -> list[NodeCommand]:
    """Every node's command; UserError listing every problem with the layout or the cluster."""
    from llama4spec.server import has_vllm_cli

    found = problems(cfg)
    if found:
        raise UserError(*found)
    return plan_nodes(cfg, has_vllm_cli() if vllm_cli is None else vllm_cli)


def log_paths(log_dir: Path, nodes: list[NodeCommand], prefix: str = "") -> list[Path]:
    return [log_dir / f"{prefix}node{n.rank}.log" for n in nodes]


def plan_serve_step(step, env: Mapping[str, str], run_dir: Path, vllm_cli: bool | None = None) -> list[str]:
    """Fill a runbook serve step (``runbook.plan.PlannedStep``) for a multi-node layout: every
    node's command, the leader's as the step's own, a log per node. Returns the layout's problems."""
    from llama4spec.server import has_vllm_cli

    cfg = step.composed.cfg
    found = problems(cfg)
    if found:
        return found
    step.nodes = plan_nodes(cfg, has_vllm_cli() if vllm_cli is None else vllm_cli, extra_env=env)
    step.argv, step.exec_argv, step.env = step.nodes[0].argv, step.nodes[0].exec_argv, step.nodes[0].env
    logs = log_paths(run_dir, step.nodes, prefix=f"{step.id}.")
    step.artifacts.update({"log": logs[0], **{f"log_node{n.rank}": log for n, log in zip(step.nodes[1:], logs[1:])}})
    return []


def step_logs(step) -> list[Path]:
    return [step.artifacts["log"], *(step.artifacts[f"log_node{n.rank}"] for n in step.nodes[1:])]


def start_nodes(cfg: Config, nodes: list[NodeCommand], logs: list[Path], secret_env: Mapping[str, str] | None = None,
                name: str = "server"):
    """Check the hosts (UserError before anything starts), then return the unstarted ``Nodes``
    (a context manager: ``with start_nodes(...) as server`` starts and stops every node)."""
    from llama4spec.multinode.checks import host_problems
    from llama4spec.multinode.nodes import Nodes
    from llama4spec.server import check_port_free

    found = host_problems(cfg, nodes)
    if found:
        raise UserError(*found)
    check_port_free(cfg.serve.host, cfg.serve.port)
    return Nodes(nodes, host=cfg.serve.host, port=cfg.serve.port, log_paths=logs, secret_env=secret_env,
                 health_timeout_s=cfg.serve.health_timeout_s, name=name)


def _tail(console: Console, lines: list[str]) -> None:
    for line in lines:
        console.print(f"  | {line}", markup=False, highlight=False)


def serve_multinode(composed: Composed, dry_run: bool, log: Path | None, console: Console,
                    gate: Callable[[Composed, str], None] | None = None) -> int:
    """Print every node's command; unless ``dry_run``, start them all and serve until Ctrl-C."""
    from llama4spec.server import ServerError, api_key_env, log_tail, sigterm_unwinds

    cfg = composed.cfg
    nodes = prepare(cfg)
    for line in dry_run_lines(cfg, nodes):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if dry_run:
        return 0
    if gate is not None:
        gate(composed, "serve")
    log_dir = log.with_suffix("") if log else Path("runs") / "serve" / time.strftime("%Y%m%d-%H%M%S")
    server = start_nodes(cfg, nodes, log_paths(log_dir, nodes), api_key_env(cfg))
    from llama4spec.tiny.build import ensure_for

    ensure_for(cfg)
    console.print(f"starting {len(nodes)} nodes; logs: [bold]{log_dir}[/bold]")
    with sigterm_unwinds():
        try:
            server.start()
        except ServerError as err:
            _tail(console, err.log_tail)
            raise
        try:
            console.print(f"[green]ready[/green] at {server.url} after {server.ready_after_s:.0f} s "
                          f"({len(nodes)} nodes); Ctrl-C stops every node")
            while server.alive():
                time.sleep(1)
            node, code, path = server.exited()
            console.print(f"[red]{node.label} exited with code {code}[/red]; log: {path}", highlight=False)
            _tail(console, log_tail(path))
            return 1
        finally:
            server.stop()
            console.print(f"stopped {len(nodes)} nodes; logs kept in {log_dir}", highlight=False)
