"""Rendering a plan (the dry run) and a run's progress. Renderers take a Console, return nothing."""

from __future__ import annotations

from typing import Iterable, Mapping

from rich.console import Console

from llama4spec.engine.args import shell_line
from llama4spec.engine.secrets import redact, redact_env
from llama4spec.results.provenance import plan_secrets
from llama4spec.runbook.plan import Plan, PlannedStep
from llama4spec.runbook.rundir import STATUS


def _env_line(step: PlannedStep, secrets: Iterable[str] = ()) -> str:
    env = redact_env(step.env, secrets)
    parts = [f"{k}={v}" for k, v in env.items()]
    parts += [f"{k}=${src} (redacted)" for k, src in step.secret_env.items()]
    return " ".join(parts) if parts else "-"


def cost_lines(plan: Plan, step_id: str | None = None) -> list[str]:
    """A step's cost line and its budget's (``step_id`` None: the whole runbook's); none where it
    starts and runs nothing."""
    from llama4spec.cost.lines import budget_line, cost_line

    pricing = plan.pricing
    if pricing is None:
        return []
    cost = pricing.total if step_id is None else pricing.steps.get(step_id)
    budget = pricing.budget if step_id is None else pricing.budgets.get(step_id)
    if cost is None or not cost.any:
        return []
    lines = [cost_line(cost, "cost of the runbook" if step_id is None else "cost")]
    return lines + ([budget_line(cost, budget)] if budget is not None else [])


def _step_text(plan: Plan, n: int, step, say, secrets) -> None:
    """One step's part of the dry run: its heading, cost, config, command, env and artifacts."""
    head = f"[{n}/{len(plan.steps)}] {step.id}: {step.kind}"
    if step.needs:
        head += f" (needs {', '.join(step.needs)})"
    say(head)
    if step.step.description:
        say(f"    {step.step.description}")
    for line in cost_lines(plan, step.id):
        say(f"    {line}")
    if step.composed:
        say("    config: " + " ".join(f"{g}={o}" for g, o in step.composed.choices.items()))
        if step.composed.overrides:
            say("    overrides: " + " ".join(step.composed.overrides))
    traits = step.step.traits
    if traits.describe_first:
        step.step.kind_of.describe(step, say)
    if step.url:
        say(f"    url: {step.url}")
    if step.argv:
        say(f"    command: {shell_line(step.argv)}")
    if step.exec_argv and step.exec_argv != step.argv:
        say(f"    runs as: {shell_line(step.exec_argv)}")
    if not traits.describe_first:
        step.step.kind_of.describe(step, say)
    if traits.shows_env:
        say(f"    env: {_env_line(step, secrets)}")
    for role, path in step.inputs.items():
        say(f"    {role}: {path}")
    for name, path in step.artifacts.items():
        say(f"    {name}: {path}")


def plan_text(console: Console, plan: Plan, environ: Mapping[str, str] | None = None) -> None:
    """The dry run: every step's config, command, env and artifacts; every line redacted (the
    plan's secrets, ``environ``'s secret values: see ``engine.secrets``)."""
    rb = plan.runbook
    secrets = plan_secrets(plan, environ)
    lines: list[str] = []  # printed at once: a sweep of a thousand servers has tens of thousands

    def say(text: str = "") -> None:
        lines.append(redact(text, secrets))

    say(f"runbook: {rb.name} ({rb.path})")
    if rb.description:
        say(f"  {rb.description}")
    say(f"run directory: {plan.run_dir}")
    say(f"overrides for every step: {' '.join([*rb.overrides, *plan.overrides]) or '-'}")
    say(f"environment for every step: {' '.join(f'{k}={v}' for k, v in redact_env(rb.env, secrets).items()) or '-'}")
    for n, step in enumerate(plan.steps, 1):
        say()
        _step_text(plan, n, step, say, secrets)
    from llama4spec.runbook.schedulers import findings

    for f in findings(plan):  # what the doctor warns of across steps, before anything starts
        say()
        say(f"doctor: {f.severity} {f.rule}: {f.line()}")
    total = cost_lines(plan)
    if total:
        say()
        for line in total:
            say(line)
    say()
    say(f"records: {plan.run_dir / STATUS}, {plan.run_dir / 'summary.md'}, "
        f"{plan.run_dir / 'plan.json'}, {plan.run_dir / 'environment.json'}, {plan.run_dir / 'host.json'}")
    console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


def command_text(console: Console, plan: Plan) -> None:
    """The serve command's one step as it prints it before starting (and for --dry-run): the
    pasteable command, what runs on this build, its environment; a multi-node server's command
    per node. Every line redacted."""
    from rich.markup import escape

    from llama4spec.multinode.plan import dry_run_lines

    p = plan.steps[0]
    secrets = plan_secrets(plan)

    def say(text: str) -> None:
        console.print(escape(text), highlight=False, soft_wrap=True)

    if p.nodes:  # the leader here, headless followers through the cluster's launcher
        for line in dry_run_lines(p.composed.cfg, p.nodes):
            say(redact(line, secrets))
        return
    say(shell_line(redact(p.argv, secrets)))
    if p.exec_argv != p.argv:
        console.print(f"runs as: {shell_line(redact(p.exec_argv, secrets))}", markup=False, highlight=False,
                      soft_wrap=True, style="dim")
    if p.env:
        say(redact("env: " + " ".join(f"{k}={v}" for k, v in redact_env(p.env, secrets).items()), secrets))
