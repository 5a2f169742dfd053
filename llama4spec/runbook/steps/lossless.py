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

from llama4spec.console import text
from llama4spec.cost.model import NONE, Work, devices
from llama4spec.engine.args import engine_env
from llama4spec.lossless.record import FILE
from llama4spec.lossless.settings import MAX_SAMPLES, Settings, temperature_problems
from llama4spec.runbook import fields
from llama4spec.runbook.spec import Traits
from llama4spec.runbook.steps.base import BaseKind
from llama4spec.runbook.steps.environ import process_env
from llama4spec.runbook.steps.failed import StepFailed

DEFAULT = Settings()
MAX_TOP_K = 1_000_000
MIN_P = ("min_p: vLLM 0.32 ignores min_p (and logit_bias) when a draft is set ('min_p and logit_bias parameters "
         "won't work with speculative decoding'), so a check of it would test nothing; drop min_p")


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
    top_p: float = fields.number(DEFAULT.top_p, 0, 1, above=True)  # above temperature 0: the nucleus (1: off)
    top_k: int = fields.count(DEFAULT.top_k, -1, MAX_TOP_K)  # above temperature 0: 0 or -1 off
    min_p: float = fields.number(0.0, 0, 1)  # refused above 0: vLLM 0.32 ignores it with a draft
    url: str | None = fields.text()  # the draft's side from this running server
    fail: bool = fields.flag(False)  # a lossy verdict fails the step

    def settings(self) -> Settings:
        return Settings(tuple(self.temperatures), self.samples, self.level, self.wide_gap, self.top_p, self.top_k,
                        self.url.rstrip("/") if self.url else None)


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
    if k.min_p > 0:
        ctx.report(p.id, [MIN_P])
    if k.url is not None:
        from llama4spec.config.layout import url_problem

        problem = url_problem("url", k.url)
        if problem:
            ctx.report(p.id, [problem])
    p.argv = ["llama4spec", "lossless", *p.composed.overrides[:-1],  # without the temperatures: they follow
              f"--temperatures={','.join(f'{t:g}' for t in k.temperatures)}", f"--samples={k.samples}",
              f"--level={k.level:g}", f"--wide-gap={k.wide_gap:g}",
              *([f"--top-p={k.top_p:g}"] if k.top_p < 1 else []), *([f"--top-k={k.top_k}"] if k.top_k > 0 else []),
              *([f"--url={k.url}"] if k.url else []), *(["--fail-on-lossless"] if k.fail else [])]
    p.env = {**ctx.runbook.env, **engine_env(cfg)}
    p.artifacts = {"record": p.dir / FILE, "config_file": p.dir / "config.yaml"}


def execute(run, p) -> dict[str, Any]:
    from llama4spec.lossless.verdict_table import render
    from llama4spec.lossless.run_engines import check

    def starting(label: str):
        if run.progress.verbosity < 0:
            return contextlib.nullcontext()
        return run.console.status(text(f"starting the {label} engine ..."))

    with process_env(p.env):
        record = check(p.composed, p.step.keys.settings(), starting, run.progress.verbosity)
    record.write(p.artifacts["record"])
    render(run.console, record)
    if p.step.keys.fail and record.verdict == "lossy":
        run.partial(p.id, record.figures())  # the verdicts stay in the run's status, summary and last lines
        raise StepFailed(f"speculation changed the output: lossy at the joint level {record.settings.level:g} "
                         f"({p.artifacts['record']})")
    return record.figures()


def describe(p, say) -> None:
    from llama4spec.lossless.check import tests_of
    from llama4spec.lossless.exact import exact_target

    k = p.step.keys
    settings = k.settings()
    hot = [t for t in k.temperatures if t > 0]
    exact = exact_target(p.composed.cfg.target.model) if p.composed is not None else None
    side = f"the server at {k.url}" if k.url else "the draft's engine"
    if 0.0 in k.temperatures:
        say(f"    temperature 0: every prompt from {side} and from the target alone, and from the target in another "
            "batch shape and order; Fisher's exact test on the divergence counts")
    if hot:
        extra = settings.described_sampling()
        say(f"    temperatures {', '.join(f'{t:g}' for t in hot)}{f' ({extra})' if extra else ''}: {k.samples} seeded "
            f"requests each from {side}, and as many from the target alone (the control)")
        say("      context-conditioned test: every token after an output's first scored by the target alone "
            "(prompt logprobs), its rank category (top-1, top-2, rest) against the target's processed "
            "probabilities there; the draft's run against the control")
        if exact:
            say("      cross-check: the emitted words against this tiny target's exact next-word distribution "
                "(exact multinomial test)")
        if p.composed is not None:
            tokens = k.samples * max(0, p.composed.cfg.generation.max_tokens - 1)
            say(f"      power (planning): {planned_power(tokens, k.level / tests_of(settings, exact))}")
    tests = tests_of(settings, exact)
    say(f"    joint level {k.level:g} over {tests} test{'s' if tests != 1 else ''} (Bonferroni: {k.level / tests:.3g} each)")


def planned_power(tokens: int, level: float) -> str:
    """The deviation the test would find with 80% power on ``tokens`` scored tokens a run, for an assumed
    target (top-1 0.6, top-2 0.15 at every context): a planning figure; the record states the one for
    the contexts collected."""
    from llama4spec.lossless.check import planned_detectable

    eps = planned_detectable(tokens, level)
    if eps is None:
        return f"{tokens:,} tokens a run are too few to state a deviation found with 80% power"
    return (f"up to {tokens:,} tokens a run; if the target's top-1 token carries 0.6 and its second 0.15, a sampler "
            f"that moves {eps:.3f} of its tokens to the top-1 or outside the top two is found with 80% power")


def fail_on_lossy(plan) -> None:
    """Every lossless step of ``plan`` fails on a lossy verdict (``run --fail-on-lossless``)."""
    for p in plan.steps:
        if p.step.kind_of is KIND:
            p.step.keys = dataclasses.replace(p.step.keys, fail=True)


def page_part(read, step, page) -> None:
    """Its verdicts on report.html, each test with its power line, from lossless.json read back
    through ``record.load`` (an unreadable record is one sentence saying so)."""
    from llama4spec.engine.secrets import redact
    from llama4spec.errors import UserError
    from llama4spec.lossless.record import load
    from llama4spec.lossless.verdict_lines import lines

    sid = str(step.get("id"))
    path = next((found[sid] for found in map(records_in, read.sources) if sid in found), None)
    if path is None:
        return
    try:
        said = lines(load(path))
    except UserError as err:
        said = [f"lossless record unreadable: {'; '.join(err.problems)}"]
    page.stated += [redact(f"{sid}: {line}", read.secrets) for line in said]


def ready_problem(p) -> str | None:
    """A check against a server that runs already: before any engine starts, it must answer as an
    OpenAI-compatible server serving the target the config names (with the configured API key)."""
    from llama4spec.serving.probe import config_problem

    url = p.step.keys.url
    if not url or p.composed is None:
        return None
    return config_problem(url.rstrip("/"), p.composed.cfg)


def work(p, before) -> Work:
    """Two engine starts, one with the draft and one without (one with url: the draft's side is a
    running server); their generation is not counted."""
    if p.composed is None:
        return NONE
    starts = 1 if p.step.keys.url else 2
    return Work(starts=(starts, starts), devices=devices(p.composed.cfg), engine=True,
                uncounted="generation, whose time depends on its prompts' outputs (an engine start is counted)")


KIND = BaseKind("lossless", Keys, Traits(starts_engine=True, loads_models=True, shows_env=True), plan, execute,
                describe, ready_problem=ready_problem, page_part=page_part, work=work)


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
