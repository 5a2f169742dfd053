"""One module per step kind; each plans, executes and describes itself:

    plan(ctx, step)        fill the planned step (argv, env, artifacts); problems go to ctx.problems
    execute(run, step)     run it; return its figures for the run's status (``steps.failed.StepFailed`` on failure)
    describe(step, say)    the dry run's lines for it beyond the common ones
"""

from __future__ import annotations

import importlib
from types import ModuleType

KINDS = ("serve", "bench", "stop", "offline", "compare", "sweep", "fetch")


def module(kind: str) -> ModuleType:
    if kind not in KINDS:
        raise ValueError(f"unknown step kind {kind!r}")
    return importlib.import_module(f"llama4spec.runbook.steps.{kind}")
