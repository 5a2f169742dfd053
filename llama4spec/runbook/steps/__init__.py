"""One module per step kind; each plans, executes and describes itself:

    plan(ctx, step)        fill the planned step (argv, env, artifacts); problems go to ctx.problems
    execute(run, step)     run it; return its figures for the run's status (StepFailed on failure)
    describe(step, say)    the dry run's lines for it beyond the common ones
"""

from __future__ import annotations

import importlib
from types import ModuleType

KINDS = ("serve", "bench", "stop", "offline", "compare", "sweep", "fetch")


class StepFailed(Exception):
    """A step that failed; ``tail`` holds the last lines of the log that says why."""

    def __init__(self, message: str, tail: list[str] | None = None):
        super().__init__(message)
        self.tail = tail or []


def module(kind: str) -> ModuleType:
    if kind not in KINDS:
        raise ValueError(f"unknown step kind {kind!r}")
    return importlib.import_module(f"llama4spec.runbook.steps.{kind}")
