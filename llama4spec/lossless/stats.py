"""The statistics of the losslessness check (pure: numpy and scipy, no engine).

Temperature 0: a request diverges when its tokens differ from the target's own greedy run; the
first differing position is kept with the target's top-2 logprob gap there (a near tie explains a
flip in floating-point order; a wide gap is a defect). Speculation's divergence count is compared
with the baseline's own (two runs without speculation in other batch shapes) by Fisher's exact test,
one-sided: does speculation diverge more often than the engine diverges from itself?

Temperature above 0: under the target, every emitted token is a draw from the target's next-token
distribution given the token before it; for the tiny targets that distribution is known exactly
and is the same after every word, so the emitted tokens fall into categories (the successor, the
spread pair's second word, any other word) with known probabilities, independently from step to
step and from request to request (each request has a seed of its own). The counts are tested
against those probabilities by an exact multinomial test: the likelihood-ratio statistic, its
p-value by seeded Monte Carlo (categories with tiny probabilities, where a chi-square
approximation fails, are kept as they are). Every test runs at the joint level divided by the
number of tests (Bonferroni), so the chance that any test rejects a lossless engine is at most the
joint level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

DRAWS = 20000  # Monte Carlo draws of the multinomial test: p-values resolve down to 1 / 20001


def first_divergence(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first position where two token sequences differ (a length difference counts at the
    shorter one's end), or None when they are identical."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def top2_gap(logprobs: Sequence[float]) -> float | None:
    """The gap between the two largest logprobs at a position (None with fewer than two)."""
    top = sorted((float(x) for x in logprobs), reverse=True)[:2]
    return top[0] - top[1] if len(top) == 2 else None


@dataclass(frozen=True)
class RateTest:
    """Fisher's exact test, one-sided: speculation's divergence rate above the baseline's own."""

    diverged: int
    requests: int
    baseline_diverged: int
    baseline_requests: int
    p_value: float


def compare_rates(diverged: int, requests: int, baseline_diverged: int, baseline_requests: int) -> RateTest:
    from scipy.stats import fisher_exact

    for n, k in ((requests, diverged), (baseline_requests, baseline_diverged)):
        if n < 1 or not 0 <= k <= n:
            raise ValueError(f"{k} of {n} requests is no count")
    table = [[diverged, requests - diverged], [baseline_diverged, baseline_requests - baseline_diverged]]
    p = float(fisher_exact(table, alternative="greater").pvalue)
    return RateTest(diverged, requests, baseline_diverged, baseline_requests, min(1.0, p))


@dataclass(frozen=True)
class Fit:
    """An exact multinomial test of observed counts against known probabilities."""

    counts: tuple[int, ...]
    probabilities: tuple[float, ...]
    statistic: float  # the likelihood-ratio statistic G = 2 sum o ln(o / e)
    p_value: float
    draws: int  # Monte Carlo draws behind the p-value (0: decided without drawing)


def _g(counts: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """G for each row of ``counts`` (last axis: categories); 0 ln 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(counts > 0, counts * np.log(counts / expected), 0.0)
    return 2.0 * terms.sum(axis=-1)


def multinomial_test(counts: Sequence[int], probabilities: Sequence[float], seed: int = 0,
                     draws: int = DRAWS) -> Fit:
    """The exact multinomial test: P(G >= G observed) under the probabilities, by ``draws`` seeded
    Monte Carlo samples ((1 + hits) / (1 + draws), never 0). A count in a category of probability 0
    gives p = 0 at once."""
    obs = np.asarray(counts, dtype=np.int64)
    p = np.asarray(probabilities, dtype=np.float64)
    if obs.shape != p.shape or obs.ndim != 1 or (obs < 0).any() or (p < 0).any():
        raise ValueError("counts and probabilities must be two lists of one length, none negative")
    if not math.isclose(float(p.sum()), 1.0, abs_tol=1e-9):
        raise ValueError(f"probabilities sum to {float(p.sum())}, not 1")
    n = int(obs.sum())
    if n == 0:
        raise ValueError("no observations to test")
    key = (tuple(int(x) for x in obs), tuple(float(x) for x in p))
    if (obs[p == 0] > 0).any():
        return Fit(*key, math.inf, 0.0, 0)
    keep = p > 0
    obs, p = obs[keep], p[keep] / p[keep].sum()
    expected = n * p
    g = float(_g(obs.astype(np.float64), expected))
    rng = np.random.default_rng(seed)
    sims = rng.multinomial(n, p, size=draws).astype(np.float64)
    hits = int((_g(sims, expected) >= g - 1e-9 * max(1.0, g)).sum())
    return Fit(*key, g, (1 + hits) / (1 + draws), draws)


def joint_level(level: float, tests: int) -> float:
    """Bonferroni: each of ``tests`` tests at ``level / tests`` holds the joint level."""
    if not 0 < level < 1 or tests < 1:
        raise ValueError(f"level {level} over {tests} tests")
    return level / tests


def detectable_shift(p: float, n: int, level: float, power: float = 0.8) -> float | None:
    """The smallest change of a probability ``p`` that a two-sided test at ``level`` on ``n`` draws
    detects with ``power`` (normal approximation): (z_(1 - level/2) + z_power) sqrt(p (1 - p) / n).
    For two categories it is the total-variation distance between the two distributions. None where
    the normal approximation does not hold (fewer than 10 expected in either outcome)."""
    from scipy.stats import norm

    if n * min(p, 1 - p) < 10:
        return None
    return float((norm.ppf(1 - level / 2) + norm.ppf(power)) * math.sqrt(p * (1 - p) / n))
