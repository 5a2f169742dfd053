"""An ``offline`` step: vLLM's ``LLM`` in this process, acceptance from its own counters."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Mapping

from llama4spec.engine.args import engine_env
from llama4spec.runbook.steps.failed import StepFailed


def plan(ctx, p) -> None:
    p.composed = ctx.compose(p.step.overrides, p.id)
    if p.composed is None:
        return
    record = p.dir / "record.json"
    p.argv = ["llama4spec", "offline", *p.composed.overrides, "--json", str(record)]
    p.env = {**ctx.runbook.env, **engine_env(p.composed.cfg)}
    p.artifacts = {"record": record, "config_file": p.dir / "config.yaml"}


@contextlib.contextmanager
def environment(env: Mapping[str, str]):
    """Set ``env`` in this process for the duration of an in-process step, then restore it."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def execute(run, p) -> dict[str, Any]:
    from llama4spec.offline.run import run_offline

    with environment(p.env):  # the step's planned environment (runbook env + engine env), as shown
        record = run_offline(p.composed, json_path=p.artifacts.get("record"), console=run.console,
                             verbosity=run.progress.verbosity)
    if record is None:
        return {}
    return {"output_tokens_per_s": record.get("output_tokens_per_s"), "speedup": record.get("speedup")}


def describe(p, say) -> None:
    pass


__all__ = ["StepFailed", "environment"]
