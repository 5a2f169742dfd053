"""Rendering a plan (the dry run) and a run's progress. Renderers take a Console, return nothing."""

from __future__ import annotations

from rich.console import Console

from llama4spec.engine.args import shell_line
from llama4spec.runbook.plan import Plan, PlannedStep
from llama4spec.runbook.record import redact_env


def _env_line(step: PlannedStep) -> str:
    env = redact_env(step.env)
    parts = [f"{k}={v}" for k, v in env.items()]
    parts += [f"{k}=${src} (redacted)" for k, src in step.secret_env.items()]
    return " ".join(parts) if parts else "-"


def plan_text(console: Console, plan: Plan) -> None:
    rb = plan.runbook
    say = lambda text="": console.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
    say(f"runbook: {rb.name} ({rb.path})")
    if rb.description:
        say(f"  {rb.description}")
    say(f"run directory: {plan.run_dir}")
    say(f"overrides for every step: {' '.join([*rb.overrides, *plan.overrides]) or '-'}")
    say(f"environment for every step: {' '.join(f'{k}={v}' for k, v in redact_env(rb.env).items()) or '-'}")
    for n, step in enumerate(plan.steps, 1):
        say()
        head = f"[{n}/{len(plan.steps)}] {step.id}: {step.kind}"
        if step.needs:
            head += f" (needs {', '.join(step.needs)})"
        say(head)
        if step.step.description:
            say(f"    {step.step.description}")
        if step.composed:
            say("    config: " + " ".join(f"{g}={o}" for g, o in step.composed.choices.items()))
            if step.composed.overrides:
                say("    overrides: " + " ".join(step.composed.overrides))
        if step.kind == "sweep" and step.step.matrix:
            say("    matrix: " + " x ".join(f"{k} [{', '.join(v)}]" for k, v in step.step.matrix.items()))
            say(f"    report over {len(step.step.points)} points (speedup, efficiency, best lookahead, plots)")
        if step.kind == "stop":
            say(f"    stop server '{step.step.server}' (its whole process group)")
        if step.url:
            say(f"    url: {step.url}")
        if step.argv:
            say(f"    command: {shell_line(step.argv)}")
        if step.exec_argv and step.exec_argv != step.argv:
            say(f"    runs as: {shell_line(step.exec_argv)}")
        for node in step.nodes[1:]:  # multi-node: the command above is the leader's, run here
            say(f"    {node.label}: {shell_line(node.argv)}")
            say(f"      runs as: {shell_line(node.exec_argv)}")
        if step.kind in ("serve", "bench", "offline"):
            say(f"    env: {_env_line(step)}")
        for role, path in step.inputs.items():
            say(f"    {role}: {path}")
        for name, path in step.artifacts.items():
            say(f"    {name}: {path}")
    say()
    say(f"records: {plan.run_dir / 'summary.json'}, {plan.run_dir / 'summary.md'}, "
        f"{plan.run_dir / 'plan.json'}, {plan.run_dir / 'environment.json'}, {plan.run_dir / 'host.json'}")
