"""An ``offline`` step: vLLM's ``LLM`` in this process, acceptance from its own counters."""

from __future__ import annotations

from typing import Any

from llama4spec.engine.args import engine_env
from llama4spec.runbook.steps.environ import process_env


def plan(ctx, p) -> None:
    p.composed = ctx.compose(p.step.overrides, p.id)
    if p.composed is None:
        return
    record = p.dir / "record.json"
    p.argv = ["llama4spec", "offline", *p.composed.overrides, "--json", str(record)]
    p.env = {**ctx.runbook.env, **engine_env(p.composed.cfg)}
    p.artifacts = {"record": record, "config_file": p.dir / "config.yaml"}


def execute(run, p) -> dict[str, Any]:
    from llama4spec.offline.run import run_offline

    with process_env(p.env):  # the step's planned environment (runbook env + engine env), as shown
        record = run_offline(p.composed, json_path=p.artifacts.get("record"), console=run.console,
                             verbosity=run.progress.verbosity)
    if record is None:
        return {}
    return {"output_tokens_per_s": record.get("output_tokens_per_s"), "speedup": record.get("speedup")}


def describe(p, say) -> None:
    pass
