"""Planning: resolve every step's config, argv, env and artifacts; check everything at once.

Pure: it reads config files and checks paths but starts nothing. ``--dry-run`` prints the very
plan that execution consumes. A CLI command (``serve``, ``bench``, ``offline``) is a one-step
plan run by the same executor as a runbook.
"""

from __future__ import annotations

import dataclasses
import graphlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from llama4spec.config.compose import Composed, compose_config
from llama4spec.config.validate import validate
from llama4spec.errors import UserError
from llama4spec.multinode.plan import NodeCommand, node_records
from llama4spec.runbook import steps as step_kinds
from llama4spec.runbook.matrix import expand as expand_sweeps
from llama4spec.runbook.pricing import price, problems as budget_problems
from llama4spec.runbook.rundir import step_dir
from llama4spec.runbook.spec import Runbook, Step


@dataclass
class PlannedStep:
    step: Step
    needs: list[str]  # explicit needs plus the implied ones (server, compared benches)
    run_dir: Path
    composed: Composed | None = None
    argv: list[str] = field(default_factory=list)  # the pasteable command
    exec_argv: list[str] = field(default_factory=list)  # what runs (differs on the CPU build)
    env: dict[str, str] = field(default_factory=dict)  # extra environment (no secrets)
    secret_env: dict[str, str] = field(default_factory=dict)  # NAME -> env var it is read from at run time
    artifacts: dict[str, Path] = field(default_factory=dict)
    url: str | None = None
    inputs: dict[str, Path] = field(default_factory=dict)  # compare: baseline / candidate files
    nodes: list[NodeCommand] = field(default_factory=list)  # serve across nodes: every node, leader first
    flat: bool = False  # a one-step plan: the step writes into the run directory itself

    @property
    def id(self) -> str:
        return self.step.id

    @property
    def kind(self) -> str:
        return self.step.kind

    @property
    def dir(self) -> Path:
        """This step's own directory in the run directory."""
        return self.run_dir if self.flat else step_dir(self.run_dir, self.id)


@dataclass
class Plan:
    runbook: Runbook
    run_dir: Path
    overrides: list[str]  # from the command line, applied to every step last
    steps: list[PlannedStep]  # in execution order
    source: str | None = None  # the runbook's text when it is no file (llama4spec sweep): the run's runbook.yaml
    pricing: Any = None  # runbook.pricing.Pricing: each step's cost, the whole plan's, the budgets

    def source_text(self) -> str:
        """The runbook as given: the run directory's runbook.yaml."""
        from llama4spec.files import read_text
        from llama4spec.runbook.yamlsafe import RUNBOOK

        return self.source if self.source is not None else read_text(self.runbook.path, RUNBOOK)

    def get(self, step_id: str) -> PlannedStep:
        return next(p for p in self.steps if p.id == step_id)

    def to_record(self, secrets: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """plan.json: every step's argv, env and artifacts, redacted (``secrets``: the plan's known
        secret values; by default collected from the plan and this process's environment)."""
        from llama4spec.engine.secrets import REDACTED, redact
        from llama4spec.results.provenance import plan_secrets

        records = [
            {
                "id": p.id,
                "kind": p.kind,
                "needs": p.needs,
                "argv": p.argv,
                "exec_argv": p.exec_argv,
                "env": p.env,
                "secret_env": {k: f"{REDACTED} (read from ${v})" for k, v in p.secret_env.items()},
                "artifacts": {k: str(v) for k, v in p.artifacts.items()},
                "url": p.url,
                "inputs": {k: str(v) for k, v in p.inputs.items()},
                "choices": p.composed.choices if p.composed else None,
                "overrides": p.composed.overrides if p.composed else None,
                **({"nodes": node_records(p.nodes)} if p.nodes else {}),
                **p.step.kind_of.plan_record(p.step),
                **(self.pricing.record(p.id) if self.pricing is not None else {}),
            }
            for p in self.steps
        ]
        return redact(records, plan_secrets(self) if secrets is None else secrets)


@dataclass
class Context:
    """What step planners see: the runbook, the command line's overrides, every planned step."""

    runbook: Runbook
    run_dir: Path
    cli: list[str]
    planned: dict[str, PlannedStep]
    kinds: dict[str, str]
    problems: list[str]
    flat: bool = False  # a one-step CLI plan: problems are the command's own, without a step name

    def at(self, step_id: str) -> str:
        return f"{self.runbook.path}: step '{step_id}'"

    def report(self, step_id: str, found: list[str]) -> None:
        self.problems.extend(found if self.flat else [f"{self.at(step_id)}: {x}" for x in found])

    def compose(self, step_overrides: list[str], step_id: str, last: list[str] | None = None) -> Composed | None:
        """The step's config (runbook, step, then command-line overrides, then ``last``: what the plan
        itself decides, such as the port of a server beside another), validated; problems recorded."""
        try:
            composed = compose_config([*self.runbook.overrides, *step_overrides, *self.cli, *(last or [])])
        except UserError as err:
            self.report(step_id, err.problems)
            return None
        self.report(step_id, validate(composed.cfg))
        return composed

    def input_file(self, ref: str) -> Path | None:
        for base in (self.runbook.path.parent, Path.cwd()):
            candidate = (base / ref).expanduser()
            if candidate.is_file():
                return candidate
        return None


def _order(runbook: Runbook, needs: dict[str, list[str]]) -> list[str]:
    """Dependencies first, otherwise file order (so stop-then-serve sequences stay sequential)."""
    done: list[str] = []
    pending = [s.id for s in runbook.steps]
    while pending:
        ready = next(sid for sid in pending if all(n in done for n in needs[sid]))
        done.append(ready)
        pending.remove(ready)
    return done


def _references(ctx: Context) -> dict[str, list[str]]:
    """Check needs, servers and compared results; the needs of every step (explicit and implied)."""
    kinds, at = ctx.kinds, ctx.at
    needs: dict[str, list[str]] = {}
    for s in ctx.runbook.steps:
        for n in s.needs:
            if n not in kinds:
                ctx.problems.append(f"{at(s.id)}: needs unknown step '{n}'; known steps: {', '.join(kinds)}")
        implied = []
        for r in s.references():
            if r.ref is None:
                continue
            if r.ref in kinds:
                implied.append(r.ref)
                if kinds[r.ref] != r.kind:
                    ctx.problems.append(f"{at(s.id)}: {r.role} '{r.ref}' is a {kinds[r.ref]} step; name "
                                        f"{'the id of ' if not r.file_ok else ''}a {r.kind} step")
            elif not r.file_ok:
                ctx.problems.append(f"{at(s.id)}: {r.role} '{r.ref}' is unknown step; name the id of a {r.kind} step")
            elif ctx.input_file(r.ref) is None:
                ctx.problems.append(f"{at(s.id)}: {r.role} '{r.ref}' is neither a {r.kind} step nor an existing file; "
                                    f"fix the step id or the path")
        needs[s.id] = list(dict.fromkeys([n for n in s.needs if n in kinds] + implied))
    return needs


def _servers_over_time(ctx: Context, order: list[str]) -> None:
    """A bench needs its server up; two live servers cannot share a port."""
    live: dict[str, str] = {}  # server step id -> url
    for sid in order:
        s, p = ctx.runbook.step(sid), ctx.planned[sid]
        if s.traits.serves:
            clash = [other for other, url in live.items() if p.url and url == p.url]
            if clash:
                ctx.problems.append(f"{ctx.at(sid)}: {p.url} is still taken by server '{clash[0]}'; stop it first "
                                    f"(a stop step in needs) or give this one another serve.port")
            live[sid] = p.url
        elif s.server in ctx.kinds and ctx.runbook.step(s.server).traits.serves:
            if s.server not in live:
                ctx.problems.append(f"{ctx.at(sid)}: server '{s.server}' is already stopped at this point; "
                                    f"reorder the steps")
            elif s.traits.stops_server:
                live.pop(s.server)


def make_plan(runbook: Runbook, run_dir: Path, cli_overrides: list[str] | tuple[str, ...] = (),
              flat: bool = False, source: str | None = None) -> Plan:
    """Plan every step; raise UserError listing every problem found, all at once."""
    cli = list(cli_overrides)
    problems: list[str] = []
    runbook = expand_sweeps(runbook, cli, problems, step_kinds.make)  # a sweep step becomes serve/bench/stop steps + its report
    ctx = Context(runbook, run_dir, cli, {}, {s.id: s.kind for s in runbook.steps}, problems, flat)
    needs = _references(ctx)
    try:
        graphlib.TopologicalSorter(needs).prepare()
        order = _order(runbook, needs)
    except graphlib.CycleError as err:
        cycle = " -> ".join(err.args[1])
        problems.append(f"{runbook.path}: the steps' needs form a cycle ({cycle}); remove one of these needs")
        order = []
    for s in runbook.steps:  # file order: a bench is planned after its server
        ctx.planned[s.id] = PlannedStep(step=s, needs=needs.get(s.id, []), run_dir=run_dir, flat=flat)
        s.kind_of.plan(ctx, ctx.planned[s.id])
    _servers_over_time(ctx, order)
    steps = [ctx.planned[sid] for sid in order]
    pricing = None
    if not problems:  # the price of what is planned, and the budgets against it
        pricing = price(runbook, steps)
        problems.extend(budget_problems(pricing, runbook))
    if problems:
        raise UserError(*problems)
    return Plan(runbook=runbook, run_dir=run_dir, overrides=cli, steps=steps, source=source, pricing=pricing)


def plan_file(path: Path, run_dir_for: Callable[[str], Path], cli_overrides: list[str] | tuple[str, ...] = (),
              repeats: int | None = None, warmup: int | None = None, budget: Any = None) -> Plan:
    """Load and plan a runbook file, reporting the file's and the plan's problems together;
    ``repeats`` / ``warmup`` replace every bench and sweep step's own, ``budget`` (``cost.budget.Budget``)
    the runbook's."""
    from llama4spec.runbook.schema import load, with_measurement

    runbook, problems = load(path)
    if runbook is not None:
        try:
            runbook = with_measurement(runbook, repeats, warmup)
            runbook = runbook if budget is None else dataclasses.replace(runbook, budget=budget)
        except UserError as err:
            raise UserError(*problems, *err.problems) from None
        try:
            planned = make_plan(runbook, run_dir_for(runbook.name), cli_overrides)
        except UserError as err:
            problems = [*problems, *err.problems]
        else:
            if not problems:
                return planned
    raise UserError(*problems)


def one_step_plan(step: Step, run_dir: Path, overrides: list[str]) -> Plan:
    """A CLI command as a plan of one step (``serve``, ``bench``, ``offline``, ``fetch``), with its
    artifacts where the command puts them (``execute.run_command`` runs it without records)."""
    runbook = Runbook(name=step.kind, path=Path(f"<{step.kind}>"), steps=[step])
    return make_plan(runbook, run_dir, overrides, flat=True)
