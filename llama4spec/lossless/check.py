"""From what the engines returned to verdicts (pure): the greedy comparison and one test per
temperature above 0, each at the joint level divided by the number of tests (Bonferroni)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from llama4spec.lossless import exact, stats
from llama4spec.lossless.settings import Settings

PASS, LOSSY = "pass", "lossy"
POSITIONS = 8  # two-sample test: output positions 1..8 (position 0 follows the prompt, before any draft)
MIN_CELL = 10  # two-sample test: tokens seen fewer times (both runs together) are pooled into one column


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
    test: str  # "exact multinomial" or "two-sample chi-square"
    requests: int
    categories: list[str]
    counts: list[int]
    expected: list[float] | None  # exact: the probabilities; two-sample: None
    statistic: float | None  # None: infinite (a word of probability 0 was seen)
    p_value: float
    level: float
    # the smallest change found with 80% power at ``level``: exact, of P(successor); two-sample, of one
    # token's probability at one position (worst case p = 0.5)
    detectable: float | None
    verdict: str
    draws: int = 0  # exact: the Monte Carlo draws (its p-value is at least 1 / (1 + draws))
    detail: list[dict[str, Any]] = field(default_factory=list)  # two-sample: each position's test
    outputs: list[dict[str, Any]] = field(default_factory=list)  # each request: prompt, seed, token_ids (with the draft)


def tests_of(settings: Settings, exact_kind: str | None) -> int:
    """How many tests the joint level is shared by."""
    hot = sum(1 for t in settings.temperatures if t > 0)
    per_hot = 1 if exact_kind else POSITIONS
    return (1 if 0.0 in settings.temperatures else 0) + hot * per_hot


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


def exact_test(kind: str, temperature: float, outputs: list[list[int]], level: float, seed: int) -> SampledTest:
    probs = exact.probabilities(kind, temperature)
    counts = exact.counts(outputs)
    fit = stats.multinomial_test(counts, probs, seed=seed)
    n = sum(counts)
    g = fit.statistic if math.isfinite(fit.statistic) else None
    return SampledTest(temperature, "exact multinomial", len(outputs), list(exact.CATEGORIES), counts, list(probs),
                       g, fit.p_value, level, stats.detectable_shift(probs[0], n, level),
                       LOSSY if fit.p_value < level else PASS, draws=fit.draws)


def two_sample_test(temperature: float, spec: list[list[int]], base: list[list[int]], level: float) -> SampledTest:
    """Per output position 1..POSITIONS: the tokens at that position with and without the draft, a
    chi-square test of homogeneity (rare tokens pooled); the temperature's p-value is the smallest
    position's, each position at ``level`` (the caller counted every position as a test)."""
    detail, lossy, counts = [], False, [0]
    smallest, statistic, sizes = 1.0, 0.0, []
    for pos in range(1, POSITIONS + 1):
        a = [x[pos] for x in spec if len(x) > pos]
        b = [x[pos] for x in base if len(x) > pos]
        p, chi = stats.homogeneity(a, b, MIN_CELL)
        detail.append({"position": pos, "tokens": [len(a), len(b)], "statistic": chi, "p_value": p})
        counts[0] += len(a)
        sizes.append((len(a), len(b)))
        if p < smallest:
            smallest, statistic = p, chi
        lossy = lossy or p < level
    n, m = (min(x[0] for x in sizes), min(x[1] for x in sizes)) if sizes else (0, 0)
    return SampledTest(temperature, "two-sample chi-square", len(spec), ["tokens"], counts, None, statistic,
                       smallest, level, stats.detectable_two_sample(n, m, level), LOSSY if lossy else PASS,
                       detail=detail)


def as_dict(obj: Any) -> dict[str, Any]:
    return asdict(obj)
