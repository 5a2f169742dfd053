"""An ``offline`` step: vLLM's ``LLM`` in this process, acceptance from its own counters."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama4spec.cost.model import NONE, Work, devices
from llama4spec.engine.args import engine_env
from llama4spec.runbook import fields
from llama4spec.runbook.steps.environ import process_env
from llama4spec.runbook.spec import Traits
from llama4spec.runbook.steps.base import BaseKind


@dataclass
class Keys:
    overrides: list[str] = fields.overrides()
    record: Path | None = None  # no reader, not a runbook key: `llama4spec offline --json PATH`'s PATH


def plan(ctx, p) -> None:
    p.composed = ctx.compose(p.step.keys.overrides, p.id)
    if p.composed is None:
        return
    record = p.step.keys.record if p.flat else p.dir / "record.json"  # a command writes one when asked
    p.argv = ["llama4spec", "offline", *p.composed.overrides, *(["--json", str(record)] if record else [])]
    p.env = {**ctx.runbook.env, **engine_env(p.composed.cfg)}
    p.artifacts = {**({"record": record} if record else {}), "config_file": p.dir / "config.yaml"}


def execute(run, p) -> dict[str, Any]:
    from llama4spec.offline.display import OfflineDisplay
    from llama4spec.offline.run import run_offline

    verbosity = run.progress.verbosity
    with process_env(p.env):  # the step's planned environment (runbook env + engine env), as shown
        record = run_offline(p.composed, OfflineDisplay(run.console, verbosity), json_path=p.artifacts.get("record"),
                             verbosity=verbosity)
    return record.figures() if record is not None else {}


def describe(p, say) -> None:
    pass


def work(p, before) -> Work:
    """One engine start (two with offline.baseline: the same prompts without a draft); its
    generation is not counted."""
    if p.composed is None:
        return NONE
    starts = 2 if p.composed.cfg.offline.baseline else 1
    return Work(starts=(starts, starts), devices=devices(p.composed.cfg), engine=True,
                uncounted="generation, whose time depends on its prompts' outputs (an engine start is counted)")


KIND = BaseKind("offline", Keys, Traits(starts_engine=True, loads_models=True, shows_env=True), plan, execute,
                describe, work=work)
