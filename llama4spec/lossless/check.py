"""From what the engines returned to verdicts (pure): the greedy comparison and, per temperature
above 0, the context-conditioned test (``conditioned``; every target) and, on the tiny targets whose
distribution is known exactly, the exact multinomial test as its cross-check; each test at the joint
level divided by the number of tests (Bonferroni)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from llama4spec.lossless import conditioned, exact, stats
from llama4spec.lossless.processed import RANKS, Context
from llama4spec.lossless.settings import Settings

PASS, LOSSY = "pass", "lossy"
CONTEXT, EXACT = "context-conditioned", "exact multinomial"


@dataclass(frozen=True)
class Divergence:
    request: int
    position: int
    gap: float | None  # the target's top-2 logprob gap there (nats), None when not known


@dataclass
class Greedy:
    requests: int
    diverged: list[Divergence]  # speculation against the target's own batch
    baseline_diverged: list[Divergence]  # the target in another batch shape and order against its own batch
    p_value: float  # Fisher's exact test, one-sided
    level: float  # the test's own (joint level / tests)
    wide: list[Divergence]  # speculation's divergences at a gap of at least wide_gap
    verdict: str


@dataclass
class SampledTest:
    temperature: float
    test: str  # CONTEXT or EXACT
    requests: int
    categories: list[str]
    counts: list[int]  # the draft's run
    expected: list[float] | None  # the draft's run: exact, the probabilities; context, the expected shares
    statistic: float | None  # None: infinite (a word of probability 0 was seen)
    p_value: float
    level: float
    # the smallest deviation found with 80% power at ``level``: exact, a shift of P(successor); context, the
    # share of tokens moved to the target's top-1 or outside its top two (``conditioned``)
    detectable: float | None
    verdict: str
    draws: int = 0  # the Monte Carlo draws (its p-value is at least 1 / (1 + draws))
    sampling: dict[str, Any] = field(default_factory=dict)  # the parameters tested: temperature, top_p, top_k
    # context: the control's counts and expected shares, each run's own fit, the eps of each direction, the
    # mean total-variation distance ``detectable`` carries, the tail's bound (top-K scoring), tokens scored
    control: dict[str, Any] = field(default_factory=dict)
    outputs: list[dict[str, Any]] = field(default_factory=list)  # each request: prompt, seed, token_ids (with the draft)


def tests_of(settings: Settings, exact_kind: str | None) -> int:
    """How many tests the joint level is shared by: the greedy comparison, and per temperature above 0
    the context-conditioned test (and the exact cross-check on a tiny target)."""
    hot = sum(1 for t in settings.temperatures if t > 0)
    return (1 if 0.0 in settings.temperatures else 0) + hot * (2 if exact_kind else 1)


def divergences(a: Sequence[Sequence[int]], b: Sequence[Sequence[int]],
                gaps: Sequence[Sequence[float | None]]) -> list[Divergence]:
    """Each request of ``a`` that differs from ``b`` (the target's own batch, whose gaps are known)."""
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        pos = stats.first_divergence(x, y)
        if pos is not None:
            g = gaps[i][pos] if i < len(gaps) and pos < len(gaps[i]) else None
            out.append(Divergence(i, pos, g))
    return out


def greedy(spec: list[list[int]], target: list[list[int]], reordered: list[list[int]],
           gaps: list[list[float | None]], settings: Settings, level: float) -> Greedy:
    mine = divergences(spec, target, gaps)
    own = divergences(reordered, target, gaps)
    n = len(target)
    test = stats.compare_rates(len(mine), n, len(own), n)
    wide = [d for d in mine if d.gap is not None and d.gap >= settings.wide_gap]
    lossy = test.p_value < level or bool(wide)
    return Greedy(n, mine, own, test.p_value, level, wide, LOSSY if lossy else PASS)


def exact_test(kind: str, settings: Settings, temperature: float, outputs: list[list[int]], level: float,
               seed: int) -> SampledTest:
    probs = exact.probabilities(kind, settings.sampling(temperature))
    counts = exact.counts(outputs)
    fit = stats.multinomial_test(counts, probs, seed=seed)
    n = sum(counts)
    g = fit.statistic if math.isfinite(fit.statistic) else None
    return SampledTest(temperature, EXACT, len(outputs), list(exact.CATEGORIES), counts, list(probs),
                       g, fit.p_value, level, stats.detectable_shift(probs[0], n, level),
                       LOSSY if fit.p_value < level else PASS, draws=fit.draws, sampling=sampling_of(settings, temperature))


def sampling_of(settings: Settings, temperature: float) -> dict[str, Any]:
    return {"temperature": temperature, "top_p": settings.top_p, "top_k": settings.top_k}


def context_test(settings: Settings, temperature: float, draft: list[Context], control: list[Context],
                 requests: int, level: float, seed: int) -> SampledTest:
    """The context-conditioned test of one temperature (``conditioned.test``) as a record entry."""
    if not draft or not control:
        raise ValueError("no scored tokens: every output has fewer than two tokens")
    r = conditioned.test(draft, control, level, seed=seed)
    n = sum(r.counts[0])
    m = sum(r.counts[1])
    g = r.statistic if math.isfinite(r.statistic) else None
    bound = max([c.bound for c in draft] + [c.bound for c in control])
    return SampledTest(
        temperature, CONTEXT, requests, list(RANKS), list(r.counts[0]), [e / n for e in r.expected[0]], g,
        r.p_value, level, r.detectable, LOSSY if r.p_value < level else PASS, draws=r.draws if r.p_value > 0 else 0,
        sampling=sampling_of(settings, temperature),
        control={"counts": list(r.counts[1]), "expected": [e / m for e in r.expected[1]], "tokens": [n, m],
                 "fit_p": {"draft": r.fit[0], "control": r.fit[1]}, "sharp": r.sharp, "flat": r.flat,
                 "tv": r.tv, "tail_bound": bound})


def planned_detectable(tokens: int, level: float, top: tuple[float, float, float] = (0.6, 0.15, 0.25)) -> float | None:
    """The deviation found with 80% power on ``tokens`` scored tokens a run (draft and control alike)
    where every context has the rank-category probabilities ``top``: a planning figure."""
    if tokens < 1:
        return None
    run = conditioned.Run(np.tile(np.array(top, dtype=np.float64), (tokens, 1)), np.zeros(tokens, dtype=np.int64))
    sharp, flat = (conditioned.detectable(run, run, level, d) for d in ("sharp", "flat"))
    return None if sharp is None or flat is None else max(sharp, flat)


def as_dict(obj: Any) -> dict[str, Any]:
    return asdict(obj)
