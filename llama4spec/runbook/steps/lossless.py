"""A ``lossless`` step: does speculation leave what the target says unchanged? (``llama4spec.lossless``.)

Its keys are the check's settings (``lossless.settings.Settings``): the temperatures (0: greedy
outputs against the target's own, judged against the engine's own divergence; above 0: the emitted
tokens' distribution), the samples per temperature, the joint level and the logprob gap at which a
greedy divergence is a defect. It writes lossless.json and shows the table; with ``fail: true`` (or
``llama4spec run --fail-on-lossless``) a lossy verdict fails the step, so the run exits 1.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama4spec.engine.args import engine_env
from llama4spec.lossless.record import FILE
from llama4spec.lossless.settings import MAX_SAMPLES, Settings, temperature_problems
from llama4spec.runbook import fields
from llama4spec.runbook.spec import Traits
from llama4spec.runbook.steps.base import BaseKind
from llama4spec.runbook.steps.environ import process_env
from llama4spec.runbook.steps.failed import StepFailed

DEFAULT = Settings()


def _temperatures(raw: dict, key: str, at: str, problems: list[str]) -> list[float]:
    value = raw.get(key, list(DEFAULT.temperatures))
    found = temperature_problems(value, f"{at}: '{key}'")
    problems.extend(found)
    return list(DEFAULT.temperatures) if found else [float(t) for t in value]


@dataclass
class Keys:
    overrides: list[str] = fields.overrides()
    temperatures: list[float] = fields.custom(_temperatures, default_factory=lambda: list(DEFAULT.temperatures))
    samples: int = fields.count(DEFAULT.samples, 1, MAX_SAMPLES)  # requests per temperature above 0
    level: float = fields.number(DEFAULT.level, 0, 0.5, above=True)  # joint: any test rejecting a lossless engine
    wide_gap: float = fields.number(DEFAULT.wide_gap, 0, 1000)  # nats
    fail: bool = fields.flag(False)  # a lossy verdict fails the step

    def settings(self) -> Settings:
        return Settings(tuple(self.temperatures), self.samples, self.level, self.wide_gap)


def plan(ctx, p) -> None:
    # the check's temperatures, as the config's offline.temperatures: the doctor judges them (a draft at
    # temperature > 0 on vLLM's CPU build needs the CPU fix) and the record's config names them
    hot = ",".join(f"{t:g}" for t in p.step.keys.temperatures)
    p.composed = ctx.compose(p.step.keys.overrides, p.id, last=[f"offline.temperatures=[{hot}]"])
    if p.composed is None:
        return
    cfg = p.composed.cfg
    if cfg.draft.method is None:
        ctx.report(p.id, [f"draft={cfg.draft.name}: nothing to compare; a losslessness check needs a draft "
                          f"(draft=tiny_eagle, say)"])
    k = p.step.keys
    p.argv = ["llama4spec", "lossless", *p.composed.overrides[:-1],  # without the temperatures: they follow
              f"--temperatures={','.join(f'{t:g}' for t in k.temperatures)}", f"--samples={k.samples}",
              f"--level={k.level:g}", f"--wide-gap={k.wide_gap:g}", *(["--fail-on-lossless"] if k.fail else [])]
    p.env = {**ctx.runbook.env, **engine_env(cfg)}
    p.artifacts = {"record": p.dir / FILE, "config_file": p.dir / "config.yaml"}


def execute(run, p) -> dict[str, Any]:
    from llama4spec.lossless.verdict_table import render
    from llama4spec.lossless.run_engines import check

    def starting(label: str):
        if run.progress.verbosity < 0:
            return contextlib.nullcontext()
        return run.console.status(f"starting the {label} engine ...")

    with process_env(p.env):
        record = check(p.composed, p.step.keys.settings(), starting, run.progress.verbosity)
    record.write(p.artifacts["record"])
    render(run.console, record)
    if p.step.keys.fail and record.verdict == "lossy":
        raise StepFailed(f"speculation changed the output: lossy at the joint level {record.settings.level:g} "
                         f"({p.artifacts['record']})")
    return record.figures()


def describe(p, say) -> None:
    from llama4spec.lossless.check import POSITIONS, tests_of
    from llama4spec.lossless.exact import exact_target

    k = p.step.keys
    hot = [t for t in k.temperatures if t > 0]
    exact = exact_target(p.composed.cfg.target.model) if p.composed is not None else None
    if 0.0 in k.temperatures:
        say("    temperature 0: every prompt with and without the draft, and without it in another batch shape and "
            "order; Fisher's exact test on the divergence counts")
    if hot:
        how = ("the emitted words against the target's exact next-word distribution (exact multinomial test)" if exact
               else f"the tokens at output positions 1-{POSITIONS} with and without the draft (two-sample chi-square)")
        say(f"    temperatures {', '.join(f'{t:g}' for t in hot)}: {k.samples} seeded requests each; {how}")
    tests = tests_of(k.settings(), exact)
    say(f"    joint level {k.level:g} over {tests} test{'s' if tests != 1 else ''} (Bonferroni: {k.level / tests:.3g} each)")


def fail_on_lossy(plan) -> None:
    """Every lossless step of ``plan`` fails on a lossy verdict (``run --fail-on-lossless``)."""
    for p in plan.steps:
        if p.step.kind_of is KIND:
            p.step.keys = dataclasses.replace(p.step.keys, fail=True)


KIND = BaseKind("lossless", Keys, Traits(starts_engine=True, loads_models=True, shows_env=True), plan, execute,
                describe)


def records_in(source) -> dict[str, Path]:
    """Each lossless step of a run directory read back (``merge.Source``) whose record is there:
    step id -> its lossless.json (step ids were checked when the plan was read)."""
    from llama4spec.runbook.rundir import step_dir

    found = {}
    for sid, name in source.kinds().items():
        if name != KIND.name:
            continue
        for where in source.runs:
            path = step_dir(where, sid) / FILE
            if path.is_file():
                found[sid] = path
                break
    return found
