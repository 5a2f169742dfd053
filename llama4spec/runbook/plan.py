"""Planning a runbook: resolve every step's config, argv, env and artifacts; check everything.

Pure: it reads config files and checks paths but starts nothing. ``--dry-run`` prints the
very plan that execution consumes.
"""

from __future__ import annotations

import graphlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from llama4spec.bench import bench_flags, display_argv, exec_argv
from llama4spec.config.compose import Composed, compose_config
from llama4spec.config.validate import validate
from llama4spec.engine.args import engine_env, serve_argv
from llama4spec.errors import UserError
from llama4spec.runbook.schema import Runbook, Step
from llama4spec.multinode.plan import NodeCommand, is_multinode, node_records
from llama4spec.multinode.serve import plan_serve_step
from llama4spec.server import base_url, launch_argv
from llama4spec.sweep.matrix import expand as expand_sweeps
from llama4spec.sweep.step import artifacts as sweep_artifacts


@dataclass
class PlannedStep:
    step: Step
    needs: list[str]  # explicit needs plus the implied ones (server, compared benches)
    composed: Composed | None = None
    argv: list[str] = field(default_factory=list)  # the pasteable command
    exec_argv: list[str] = field(default_factory=list)  # what runs (differs on the CPU build)
    env: dict[str, str] = field(default_factory=dict)  # extra environment (no secrets)
    secret_env: dict[str, str] = field(default_factory=dict)  # NAME -> env var it is read from at run time
    artifacts: dict[str, Path] = field(default_factory=dict)
    url: str | None = None
    inputs: dict[str, Path] = field(default_factory=dict)  # compare: baseline / candidate files
    nodes: list[NodeCommand] = field(default_factory=list)  # serve across nodes: every node, leader first

    @property
    def id(self) -> str:
        return self.step.id

    @property
    def kind(self) -> str:
        return self.step.kind


@dataclass
class Plan:
    runbook: Runbook
    run_dir: Path
    overrides: list[str]  # from the command line, applied to every step last
    steps: list[PlannedStep]  # in execution order

    def get(self, step_id: str) -> PlannedStep:
        return next(p for p in self.steps if p.id == step_id)

    def to_record(self) -> list[dict[str, Any]]:
        return [
            {
                "id": p.id,
                "kind": p.kind,
                "needs": p.needs,
                "argv": p.argv,
                "exec_argv": p.exec_argv,
                "env": p.env,
                "secret_env": {k: f"${v} (redacted)" for k, v in p.secret_env.items()},
                "artifacts": {k: str(v) for k, v in p.artifacts.items()},
                "url": p.url,
                "inputs": {k: str(v) for k, v in p.inputs.items()},
                "choices": p.composed.choices if p.composed else None,
                "overrides": p.composed.overrides if p.composed else None,
                **({"nodes": node_records(p.nodes)} if p.nodes else {}),
            }
            for p in self.steps
        ]


def _implied_needs(step: Step, kinds: dict[str, str]) -> list[str]:
    implied = [step.server] if step.server else []
    for ref in (step.baseline, step.candidate):
        if ref and ref in kinds:
            implied.append(ref)
    return implied


def _order(runbook: Runbook, needs: dict[str, list[str]]) -> list[str]:
    """Dependencies first, otherwise file order (so stop-then-serve sequences stay sequential)."""
    done: list[str] = []
    pending = [s.id for s in runbook.steps]
    while pending:
        ready = next(sid for sid in pending if all(n in done for n in needs[sid]))
        done.append(ready)
        pending.remove(ready)
    return done


def _compose(runbook: Runbook, step_overrides: list[str], cli: list[str], at: str,
             problems: list[str]) -> Composed | None:
    try:
        composed = compose_config([*runbook.overrides, *step_overrides, *cli])
    except UserError as err:
        problems.extend(f"{at}: {p}" for p in err.problems)
        return None
    problems.extend(f"{at}: {p}" for p in validate(composed.cfg))
    return composed


def _serve_env(composed: Composed, runbook: Runbook) -> tuple[dict[str, str], dict[str, str]]:
    env = {**runbook.env, **engine_env(composed.cfg)}
    secret = {"VLLM_API_KEY": composed.cfg.serve.api_key_env} if composed.cfg.serve.api_key_env else {}
    return env, secret


def _input_file(ref: str, runbook: Runbook) -> Path | None:
    for base in (runbook.path.parent, Path.cwd()):
        candidate = (base / ref).expanduser()
        if candidate.is_file():
            return candidate
    return None


def make_plan(runbook: Runbook, run_dir: Path, cli_overrides: list[str] | tuple[str, ...] = (),
              vllm_cli: bool | None = None) -> Plan:
    """Plan every step; raise UserError listing every problem found, all at once."""
    cli = list(cli_overrides)
    problems: list[str] = []
    runbook = expand_sweeps(runbook, cli, problems)  # a sweep step becomes serve/bench/stop steps + its report
    kinds = {s.id: s.kind for s in runbook.steps}
    at = {s.id: f"{runbook.path}: step '{s.id}'" for s in runbook.steps}

    # References: needs, servers, compared results.
    needs: dict[str, list[str]] = {}
    for s in runbook.steps:
        for n in s.needs:
            if n not in kinds:
                problems.append(f"{at[s.id]}: needs unknown step '{n}'; known steps: {', '.join(kinds)}")
        if s.server is not None and kinds.get(s.server) != "serve":
            what = "unknown step" if s.server not in kinds else f"a {kinds[s.server]} step"
            problems.append(f"{at[s.id]}: server '{s.server}' is {what}; name the id of a serve step")
        for role, ref in (("baseline", s.baseline), ("candidate", s.candidate)):
            if ref is None:
                continue
            if ref in kinds:
                if kinds[ref] != "bench":
                    problems.append(f"{at[s.id]}: {role} '{ref}' is a {kinds[ref]} step; name a bench step")
            elif _input_file(ref, runbook) is None:
                problems.append(
                    f"{at[s.id]}: {role} '{ref}' is neither a bench step nor an existing file; "
                    f"fix the step id or the path"
                )
        needs[s.id] = list(dict.fromkeys([n for n in s.needs if n in kinds] +
                                         [n for n in _implied_needs(s, kinds) if n in kinds]))

    # Cycles.
    sorter = graphlib.TopologicalSorter(needs)
    try:
        sorter.prepare()
        order = _order(runbook, needs)
    except graphlib.CycleError as err:
        cycle = " -> ".join(err.args[1])
        problems.append(f"{runbook.path}: the steps' needs form a cycle ({cycle}); remove one of these needs")
        order = []

    # Configs, commands, artifacts.
    planned: dict[str, PlannedStep] = {}
    for s in runbook.steps:
        p = PlannedStep(step=s, needs=needs.get(s.id, []))
        planned[s.id] = p
        if s.kind in ("serve", "offline"):
            p.composed = _compose(runbook, s.overrides, cli, at[s.id], problems)
        elif s.kind == "bench" and kinds.get(s.server) == "serve" and planned.get(s.server, p).composed:
            server_step = runbook.step(s.server)  # its own problems are reported once, at the serve step
            p.composed = _compose(runbook, [*server_step.overrides, *s.overrides], cli, at[s.id], problems)

    for s in runbook.steps:
        p = planned[s.id]
        cfg = p.composed.cfg if p.composed else None
        if s.kind == "serve" and cfg:
            p.argv = serve_argv(cfg)
            p.exec_argv = launch_argv(cfg, vllm_cli)
            p.env, p.secret_env = _serve_env(p.composed, runbook)
            p.url = base_url(cfg.serve.host, cfg.serve.port)
            p.artifacts = {"log": run_dir / f"{s.id}.log", "config_file": run_dir / f"{s.id}.config.yaml"}
            if is_multinode(cfg):  # the leader here, headless followers through the cluster's launcher
                problems.extend(f"{at[s.id]}: {x}" for x in plan_serve_step(p, runbook.env, run_dir, vllm_cli))
        elif s.kind == "bench" and cfg:
            server = planned[s.server]
            p.url = server.url or base_url(cfg.serve.host, cfg.serve.port)
            flags = bench_flags(cfg, p.url, run_dir, f"{s.id}.vllm.json", s.label or s.id, s.extra_args)
            p.argv, p.exec_argv = display_argv(flags), exec_argv(flags)
            p.env = dict(runbook.env)
            p.secret_env = {"OPENAI_API_KEY": cfg.serve.api_key_env} if cfg.serve.api_key_env else {}
            p.artifacts = {
                "result": run_dir / f"{s.id}.vllm.json",
                "record": run_dir / f"{s.id}.json",
                "log": run_dir / f"{s.id}.log",
                "config_file": run_dir / f"{s.id}.config.yaml",
            }
        elif s.kind == "offline" and p.composed:
            record = run_dir / f"{s.id}.json"
            p.argv = ["llama4spec", "offline", *p.composed.overrides, "--json", str(record)]
            p.env = {**runbook.env, **engine_env(cfg)}
            p.artifacts = {"record": record, "config_file": run_dir / f"{s.id}.config.yaml"}
        elif s.kind == "compare":
            for role, ref in (("baseline", s.baseline), ("candidate", s.candidate)):
                if ref in kinds:
                    p.inputs[role] = run_dir / f"{ref}.json"
                elif ref:
                    p.inputs[role] = _input_file(ref, runbook) or Path(ref)
            p.artifacts = {"table": run_dir / f"{s.id}.md"}
        elif s.kind == "sweep":
            p.artifacts = sweep_artifacts(run_dir, s.id)

    # Servers over time: a bench needs its server up; two live servers cannot share a port.
    live: dict[str, str] = {}  # server step id -> url
    for sid in order:
        s, p = runbook.step(sid), planned[sid]
        if s.kind == "serve":
            clash = [other for other, url in live.items() if p.url and url == p.url]
            if clash:
                problems.append(
                    f"{at[sid]}: {p.url} is still taken by server '{clash[0]}'; stop it first "
                    f"(a stop step in needs) or give this one another serve.port"
                )
            live[sid] = p.url
        elif s.kind in ("bench", "stop") and s.server in kinds and kinds[s.server] == "serve":
            if s.server not in live:
                problems.append(f"{at[sid]}: server '{s.server}' is already stopped at this point; reorder the steps")
            elif s.kind == "stop":
                live.pop(s.server)

    if problems:
        raise UserError(*problems)
    return Plan(runbook=runbook, run_dir=run_dir, overrides=cli, steps=[planned[sid] for sid in order])


def plan_file(path: Path, run_dir_for: Callable[[str], Path], cli_overrides: list[str] | tuple[str, ...] = (),
              vllm_cli: bool | None = None) -> Plan:
    """Load and plan a runbook file, reporting the file's and the plan's problems together."""
    from llama4spec.runbook.schema import load

    runbook, problems = load(path)
    if runbook is not None:
        try:
            return_plan = make_plan(runbook, run_dir_for(runbook.name), cli_overrides, vllm_cli)
        except UserError as err:
            problems = [*problems, *err.problems]
        else:
            if not problems:
                return return_plan
    raise UserError(*problems)
