"""A speculative setting's frontier against no speculation's: the ratio of output throughput per
device at each per-user speed both curves reach, with its interval and verdict, and where the
ratio crosses 1.

Each curve's log throughput per device at a speed is the weighted mean of its two neighbouring
nodes' mean log throughputs (``Curve.weights``: linear in log speed). The ratio's log is their
difference; its variance is the sweep's (``statistic.LogRatio``, the sweep's noise estimate): each
node's within-start variance of its mean times its weight squared, on its runs - 1 df, plus the
between-start term of each side's server (a setting's nodes share their server's start, so its
weights sum to one offset), Satterthwaite's df. The speeds tested are every measured node of
either curve inside the speeds both reach; each is two one-sided tests (faster, slower), Holm over
all of a candidate's speeds at 1 - confidence: at most that chance of any false verdict per
candidate. An interval is at its Holm step's level, so it excludes 1 exactly when decided; an
undecided ratio whose interval lies within +-margin is equivalent (two one-sided tests).

A crossover is where the estimated log ratio (piecewise linear in log speed) changes sign. Its
interval is the set of speeds around it where the pointwise interval at ``confidence`` still holds
1 (the test inverted), found on a grid of ``GRID`` speeds; a side that reaches the end of the
speeds both curves reach is open. The per-user speed is taken as measured: only the throughput's
noise enters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llama4spec.frontier.curve import Curve
from llama4spec.stats.interval import CONFIDENCE, Interval
from llama4spec.stats.looks import holm
from llama4spec.stats.noise import Noise
from llama4spec.stats.ratio import interval_at, start_share
from llama4spec.stats.statistic import LogRatio

GRID = 400  # speeds a crossover's interval is searched on
SAME = 1e-3  # speeds closer than this (relative) are one


@dataclass(frozen=True)
class AtSpeed:
    """The candidate against no speculation at one per-user speed."""

    speed: float
    candidate: float  # tok/s per device (geometric mean, interpolated)
    baseline: float
    interval: Interval | None  # None: a node with fewer than 2 runs
    verdict: str  # faster, slower, equivalent, undecided
    level: float | None = None  # one-sided alpha of the interval

    @property
    def ratio(self) -> float:
        return self.candidate / self.baseline


@dataclass(frozen=True)
class Crossover:
    speed: float
    low: float | None  # None: open, the interval reaches the slowest speed both curves reach
    high: float | None  # None: open at the fastest
    pays_above: bool  # speculation gives more tokens per device above this speed (not below)


@dataclass(frozen=True)
class Versus:
    candidate: Curve
    baseline: Curve
    at: tuple[AtSpeed, ...]
    crossovers: tuple[Crossover, ...]
    overlap: tuple[float, float] | None  # the speeds both curves reach
    confidence: float = CONFIDENCE


def overlap(a: Curve, b: Curve) -> tuple[float, float] | None:
    low, high = max(a.span[0], b.span[0]), min(a.span[1], b.span[1])
    return (low, high) if low <= high * (1 + 1e-9) else None


def speeds(a: Curve, b: Curve) -> list[float]:
    """Every frontier node's speed of either curve inside their overlap, ascending, near ones merged."""
    span = overlap(a, b)
    if span is None:
        return []
    inside = sorted(n.speed for c in (a, b) for n in c.frontier if span[0] * (1 - 1e-9) <= n.speed <= span[1] * (1 + 1e-9))
    out: list[float] = []
    for s in inside:
        if not out or s > out[-1] * (1 + SAME):
            out.append(min(max(s, span[0]), span[1]))
    return out


def estimate(a: Curve, b: Curve, speed: float, noise: Noise | None):
    """a over b at ``speed`` as the sweep's statistic estimates it; None where a node lacks 2 runs."""
    wa, wb = a.weights(speed), b.weights(speed)
    if not wa or not wb:
        return None
    within = []
    for nodes in (wa, wb):
        for n, w in nodes:
            v = n.within()
            if v is None:
                return None
            if w > 0:
                within.append((w * w * v[0], v[1]))
    shares = sum(max(start_share(n.starts) if n.starts else 1.0 for n, _ in nodes) for nodes in (wa, wb))
    return LogRatio(noise).combined(a.log_at(speed) - b.log_at(speed), within, shares)


def _p_values(ests) -> np.ndarray:
    from scipy import special

    t = np.array([float(e.t()) for e in ests])
    df = np.array([float(e.df) for e in ests])
    return np.concatenate([special.stdtr(df, -t), special.stdtr(df, t)]) if ests else np.zeros(0)


def versus(a: Curve, b: Curve, noise: Noise | None, confidence: float = CONFIDENCE,
           margin: float | None = None) -> Versus:
    """Candidate ``a`` against no speculation ``b`` (see the module)."""
    grid = speeds(a, b)
    ests = {s: estimate(a, b, s, noise) for s in grid}
    tested = [s for s in grid if ests[s] is not None]
    alpha = 1.0 - confidence
    p = _p_values([ests[s] for s in tested])
    m = p.size
    rejected = holm(p, alpha) if m else np.zeros(0, dtype=bool)
    step = np.empty(m, dtype=int)
    step[np.argsort(np.nan_to_num(p, nan=1.0), kind="stable")] = np.arange(m)
    next_level = alpha / max(m - int(rejected.sum()), 1)
    at = []
    for s in grid:
        ca, cb = math.exp(a.log_at(s)), math.exp(b.log_at(s))
        if ests[s] is None:
            at.append(AtSpeed(s, ca, cb, None, "undecided"))
            continue
        u = tested.index(s)
        side = u if rejected[u] else u + len(tested) if rejected[u + len(tested)] else None
        level = alpha / (m - int(step[side])) if side is not None else next_level
        iv = interval_at(LogRatio(noise), ests[s], 1.0 - 2.0 * level)
        verdict = "faster" if side == u else "slower" if side is not None else "undecided"
        if verdict == "undecided" and margin is not None and 1 / (1 + margin) <= iv.low and iv.high <= 1 + margin:
            verdict = "equivalent"
        at.append(AtSpeed(s, ca, cb, iv, verdict, level))
    return Versus(a, b, tuple(at), crossovers(a, b, noise, confidence), overlap(a, b), confidence)


def crossovers(a: Curve, b: Curve, noise: Noise | None, confidence: float = CONFIDENCE) -> tuple[Crossover, ...]:
    """Where a over b crosses 1 inside the speeds both reach, each with its interval (see the module)."""
    grid = speeds(a, b)
    centers = [a.log_at(s) - b.log_at(s) for s in grid]
    out = []
    for (s0, c0), (s1, c1) in zip(zip(grid, centers), zip(grid[1:], centers[1:])):
        if c0 == 0 or c0 * c1 >= 0:
            continue
        at = math.exp(math.log(s0) + (math.log(s1) - math.log(s0)) * c0 / (c0 - c1))
        low, high = _bounds(a, b, at, (grid[0], grid[-1]), noise, confidence)
        out.append(Crossover(at, low, high, pays_above=c1 > 0))
    return tuple(out)


def _holds_one(a: Curve, b: Curve, speed: float, noise: Noise | None, confidence: float) -> bool:
    est = estimate(a, b, speed, noise)
    if est is None:
        return True
    iv = interval_at(LogRatio(noise), est, confidence)
    return iv.low <= 1.0 <= iv.high


def _bounds(a: Curve, b: Curve, at: float, span: tuple[float, float], noise: Noise | None,
            confidence: float) -> tuple[float | None, float | None]:
    """The ends of the run of speeds around ``at`` whose interval holds 1 (None: it reaches the span's end)."""
    grid = np.exp(np.linspace(math.log(span[0]), math.log(span[1]), GRID))
    holds = [_holds_one(a, b, float(s), noise, confidence) for s in grid]
    i = int(np.searchsorted(grid, at))
    lo = next((j for j in range(min(i, GRID - 1), -1, -1) if grid[j] <= at and not holds[j]), None)
    hi = next((j for j in range(max(i - 1, 0), GRID) if grid[j] >= at and not holds[j]), None)
    return (None if lo is None else float(grid[lo]), None if hi is None else float(grid[hi]))
