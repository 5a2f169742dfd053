"""The break-even map: what speculation costs this engine, measured apart from any draft.

Input: throughput runs of servers with synthetic acceptance (vLLM's ``rejection_sample_method:
synthetic``) at a grid of acceptance lengths per (lookahead, concurrency), of a server without
speculation, and optionally of a real draft. Output, per (lookahead, concurrency):

- the speedup at each grid length against no speculation: the ratio of geometric means with
  Welch's t interval on log throughput plus the between-start term of a noise estimate
  (``stats.noise.Noise``: each server here is one start; its df in Satterthwaite's), as the sweep
  computes it (``ratio.welch_ratio``); the caller gives the estimate (a profile, the hardware's
  prior, or the runs' own starts);
- a fit of log speedup monotone (non-decreasing) in acceptance length (weighted pool-adjacent-
  violators, weights 1 / variance), read between grid points by linear interpolation;
- the break-even acceptance length, where the fit crosses speedup 1, with a percentile interval
  from a parametric bootstrap over servers: each server's mean log throughput drawn as its mean
  + its standard error x Student t(n - 1) + the between-start sd x N(0, 1), the fit and the crossing
  recomputed per draw (the baseline's draw is shared by every ratio, as the measurements share it);
- the cost of k = 0: acceptance length 1.0 (every draft token rejected) against no speculation;
- a real draft placed on the map: its acceptance length from vLLM's counters, the speedup the map
  predicts there, its headroom above break-even, what limits it (engine cost when no acceptance
  within [1, k + 1] pays, else draft quality when it sits below break-even), and the self-check:
  its measured log speedup minus the map's prediction, whose bootstrap interval must hold 0;
- a draft measured elsewhere (``Given``: a record handed to the map) placed the same way at its
  acceptance length from vLLM's counters; its measured speedup, where the record has one, is the
  record's own (against its own no speculation, with its own interval), so the self-check draws it
  as a normal on the log scale with the sd that interval implies.

The x axis is the acceptance length vLLM's counters measured at each synthetic point (the set
length where a point has no counters), so the real draft and the map are read on one scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from llama4spec.stats.ratio import welch_ratio
from llama4spec.stats.noise import Noise

CONFIDENCE = 0.95  # two-sided, of every interval
DRAWS = 4000  # bootstrap draws
SEED = 0  # the draws' seed: the same runs give the same map
CROSSES, PAYS, NEVER = "crosses", "pays at every length", "never pays"


@dataclass(frozen=True)
class Runs:
    """One server's counted runs at one concurrency."""

    concurrency: int
    throughputs: tuple[float, ...]  # output tokens/s per counted run
    lookahead: int | None = None  # None: no speculation
    set_length: float | None = None  # synthetic acceptance length; None: a real draft (or none)
    acceptance: tuple[float, ...] = ()  # mean acceptance length per run, from vLLM's counters
    label: str = ""  # the point's name (its step id)

    @property
    def length(self) -> float | None:
        """Where it sits on the map: the counters' mean, else the set length."""
        return float(np.mean(self.acceptance)) if self.acceptance else self.set_length


@dataclass(frozen=True)
class Range:
    """A figure and its interval (None: beyond the grid on that side)."""

    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Given:
    """A draft measured outside this map (a record given): one lookahead and concurrency."""

    lookahead: int
    concurrency: int
    acceptance: tuple[float, ...]  # mean acceptance length per counted run, from vLLM's counters
    label: str
    speedup: Range | None = None  # its speedup over no speculation as the record measured it
    confidence: float = 0.95  # of that speedup's interval


@dataclass(frozen=True)
class MapPoint:
    label: str
    set_length: float | None
    length: float  # where it sits (counters' mean, else set)
    speedup: Range
    fitted: float  # the monotone fit's speedup there


@dataclass(frozen=True)
class BreakEven:
    value: float | None  # the fit's crossing of speedup 1; None when it does not cross within the grid
    low: float | None  # None: below the grid's first length
    high: float | None  # None: above the grid's last length
    state: str  # CROSSES, PAYS (already at the shortest length), NEVER (not even at the longest)
    first: float
    last: float


@dataclass(frozen=True)
class Placement:
    label: str
    acceptance_length: float  # vLLM's counters, mean over its runs
    measured: Range | None  # its speedup against no speculation (None: a record given without one)
    predicted: Range  # the map's speedup at its acceptance length
    headroom: Range  # its acceptance length minus break-even (None: break-even outside the grid)
    limit: str  # "pays", "draft quality" or "engine cost"
    difference: Range | None  # measured / predicted speedup (1: agreement; None: nothing measured)
    agrees: bool | None  # the self-check: the difference's interval holds 1 (None: nothing measured)
    given: bool = False  # measured outside this map (a record given), not beside it


@dataclass(frozen=True)
class Curve:
    lookahead: int
    concurrency: int
    points: tuple[MapPoint, ...]
    breakeven: BreakEven
    k0_cost: Range | None  # acceptance length 1.0 against no speculation (None: not measured)
    placements: tuple[Placement, ...] = ()


@dataclass(frozen=True)
class BreakEvenMap:
    curves: tuple[Curve, ...]
    noise: Noise
    confidence: float
    draws: int
    notes: tuple[str, ...] = field(default=())

    def curve(self, lookahead: int, concurrency: int) -> Curve | None:
        return next((c for c in self.curves if c.lookahead == lookahead and c.concurrency == concurrency), None)


# -- the fit -----------------------------------------------------------------------------------------
def monotone(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted least squares fit non-decreasing along the last axis (pool adjacent violators);
    ``y`` [..., n], ``w`` [n] positive."""
    y = np.asarray(y, float)
    flat = y.reshape(-1, y.shape[-1])
    out = np.empty_like(flat)
    for row, values in enumerate(flat):
        blocks: list[list[float]] = []  # [mean, weight, count]
        for v, wt in zip(values, w):
            blocks.append([float(v), float(wt), 1])
            while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
                m2, w2, c2 = blocks.pop()
                m1, w1, c1 = blocks.pop()
                blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
        out[row] = np.concatenate([[m] * c for m, _, c in blocks])
    return out.reshape(y.shape)


def crossing(x: np.ndarray, f: np.ndarray) -> float:
    """Where a non-decreasing fit ``f`` over ascending ``x`` first reaches 0: -inf when it starts at
    or above 0, +inf when it never does, else linear interpolation between the grid points."""
    above = np.flatnonzero(f >= 0)
    if above.size == 0:
        return math.inf
    j = int(above[0])
    if j == 0:
        return -math.inf
    x0, x1, f0, f1 = x[j - 1], x[j], f[j - 1], f[j]
    return float(x0 + (0.0 - f0) * (x1 - x0) / (f1 - f0))


# -- the draws ---------------------------------------------------------------------------------------
def _log_stats(runs: Runs) -> tuple[float, float, int]:
    """(mean log throughput, standard error of it, runs)."""
    logs = np.log(np.asarray(runs.throughputs, float))
    n = logs.size
    return float(logs.mean()), float(logs.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0, n


def _draw(runs: Runs, between_sd: float, rng: np.random.Generator, draws: int) -> np.ndarray:
    """Draws of a server's mean log throughput (within: t(n - 1) x se; between starts: normal)."""
    mean, se, n = _log_stats(runs)
    within = se * rng.standard_t(n - 1, draws) if n > 1 else 0.0
    return mean + within + between_sd * rng.standard_normal(draws)


def _quantiles(values: np.ndarray, confidence: float) -> tuple[float, float]:
    a = (1.0 - confidence) / 2
    low, high = np.quantile(values, [a, 1 - a], method="inverted_cdf")  # order statistics: infinities stay
    return float(low), float(high)


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _check(runs: Runs) -> None:
    if len(runs.throughputs) < 2 or not all(t > 0 and math.isfinite(t) for t in runs.throughputs):
        raise ValueError(f"{runs.label or 'a point'}: a break-even map needs at least 2 positive runs a point")


def ratio(numerator: Sequence[float], denominator: Sequence[float], confidence: float, noise: Noise) -> Range:
    """The ratio of geometric means with Welch's t interval on mean log throughput, each side one
    server start (the two within-start variances of the means plus twice ``noise``'s between-start
    variance, on Satterthwaite's df), as the sweep compares points (``ratio.welch_ratio``)."""
    iv = welch_ratio(numerator, denominator, confidence, noise)
    return Range(iv.ratio, iv.low, iv.high)


# -- the map -----------------------------------------------------------------------------------------
def build(baseline: Sequence[Runs], synthetic: Sequence[Runs], real: Sequence[Runs] = (), *,
          noise: Noise, confidence: float = CONFIDENCE, draws: int = DRAWS,
          seed: int = SEED, given: Sequence[Given] = ()) -> BreakEvenMap:
    """The map from no speculation's runs (one per concurrency), the synthetic points and the real
    draft's points (each with its lookahead and concurrency), with drafts measured elsewhere
    (``given``) placed where a curve of their lookahead and concurrency exists. Points without a baseline at their
    concurrency, and (lookahead, concurrency) pairs with fewer than 2 grid lengths, are left out
    and named in the notes."""
    rng = np.random.default_rng(seed)
    base = {b.concurrency: b for b in baseline}
    notes: list[str] = []
    for r in [*baseline, *synthetic, *real]:
        _check(r)
    groups: dict[tuple[int, int], list[Runs]] = {}
    for s in synthetic:
        groups.setdefault((int(s.lookahead or 0), s.concurrency), []).append(s)
    curves = []
    for (k, c), points in sorted(groups.items()):
        if c not in base:
            notes.append(f"k={k}, c={c}: no run without speculation at this concurrency; left out")
            continue
        points = sorted(points, key=lambda p: (p.length, p.set_length or 0.0))
        if len({p.length for p in points}) < 2:
            notes.append(f"k={k}, c={c}: fewer than 2 acceptance lengths; no curve")
            continue
        curves.append(_curve(k, c, base[c], points, [r for r in real if r.lookahead == k and r.concurrency == c],
                             noise, confidence, draws, rng,
                             [g for g in given if g.lookahead == k and g.concurrency == c and g.acceptance]))
    placed = {(c.lookahead, c.concurrency) for c in curves}
    notes += [f"{g.label}: no curve at k={g.lookahead}, c={g.concurrency}; not placed" for g in given
              if (g.lookahead, g.concurrency) not in placed]
    return BreakEvenMap(tuple(curves), noise, confidence, draws, tuple(notes))


def _curve(k: int, c: int, base: Runs, points: list[Runs], real: list[Runs], noise: Noise, confidence: float,
           draws: int, rng: np.random.Generator, given: Sequence[Given] = ()) -> Curve:
    between_sd = noise.between.sd
    x = np.array([p.length for p in points], float)
    base_mean, base_se, _ = _log_stats(base)
    stats = [_log_stats(p) for p in points]
    y = np.array([m - base_mean for m, _, _ in stats])
    w = np.array([1.0 / (se ** 2 + base_se ** 2 + 2 * between_sd ** 2 + 1e-12) for _, se, _ in stats])
    fit = monotone(y, w)
    base_draws = _draw(base, between_sd, rng, draws)
    y_draws = np.stack([_draw(p, between_sd, rng, draws) - base_draws for p in points], axis=-1)
    fit_draws = monotone(y_draws, w)
    cross = crossing(x, fit)
    cross_draws = np.array([crossing(x, f) for f in fit_draws])
    low, high = _quantiles(cross_draws, confidence)
    state = CROSSES if math.isfinite(cross) else (PAYS if cross < 0 else NEVER)
    breakeven = BreakEven(_finite(cross), _finite(low), _finite(high), state, float(x[0]), float(x[-1]))
    map_points = tuple(MapPoint(p.label, p.set_length, float(xi), ratio(p.throughputs, base.throughputs,
                                                                            confidence, noise),
                                float(math.exp(f))) for p, xi, f in zip(points, x, fit))
    zero = next((p for p in points if p.set_length is not None and p.set_length == 1.0), None)
    k0 = ratio(zero.throughputs, base.throughputs, confidence, noise) if zero else None
    placements = tuple(_place(r, base, base_draws, x, fit, fit_draws, cross, cross_draws, state, noise,
                              confidence, rng, draws) for r in real if r.acceptance)
    placements += tuple(_place_given(g, x, fit, fit_draws, cross, cross_draws, state, confidence, rng, draws)
                        for g in given)
    return Curve(k, c, map_points, breakeven, k0, placements)


def _place(r: Runs, base: Runs, base_draws: np.ndarray, x: np.ndarray, fit: np.ndarray, fit_draws: np.ndarray,
           cross: float, cross_draws: np.ndarray, state: str, noise: Noise, confidence: float,
           rng: np.random.Generator, draws: int) -> Placement:
    at = _at(r.acceptance, x, fit, fit_draws, cross, cross_draws, state, confidence, rng, draws)
    real_draws = _draw(r, noise.between.sd, rng, draws) - base_draws
    d_low, d_high = _quantiles(real_draws - at.predicted_draws, confidence)
    measured = ratio(r.throughputs, base.throughputs, confidence, noise)
    d = _log_stats(r)[0] - _log_stats(base)[0] - at.pred
    return Placement(r.label, at.a, measured, at.predicted, at.headroom, at.limit,
                     Range(math.exp(d), math.exp(d_low), math.exp(d_high)), d_low <= 0.0 <= d_high)


@dataclass(frozen=True)
class _At:
    """Where an acceptance length sits on a curve: the prediction with its draws, headroom, limit."""

    a: float
    pred: float  # log speedup the fit predicts
    predicted_draws: np.ndarray
    predicted: Range
    headroom: Range
    limit: str


def _at(acceptance: Sequence[float], x: np.ndarray, fit: np.ndarray, fit_draws: np.ndarray, cross: float,
        cross_draws: np.ndarray, state: str, confidence: float, rng: np.random.Generator, draws: int) -> _At:
    acc = np.asarray(acceptance, float)
    a = float(acc.mean())
    a_se = float(acc.std(ddof=1) / math.sqrt(acc.size)) if acc.size > 1 else 0.0
    a_draws = a + (a_se * rng.standard_t(acc.size - 1, draws) if acc.size > 1 else 0.0)
    predicted_draws = np.array([np.interp(ad, x, f) for ad, f in zip(np.broadcast_to(a_draws, (draws,)), fit_draws)])
    pred = float(np.interp(a, x, fit))
    p_low, p_high = _quantiles(predicted_draws, confidence)
    h_low, h_high = _quantiles(a_draws - cross_draws, confidence)
    headroom = Range(a - cross if math.isfinite(cross) else None, _finite(h_low), _finite(h_high))
    limit = "engine cost" if state == NEVER else "draft quality" if pred < 0 else "pays"
    return _At(a, pred, predicted_draws, Range(math.exp(pred), math.exp(p_low), math.exp(p_high)), headroom, limit)


def _place_given(g: Given, x: np.ndarray, fit: np.ndarray, fit_draws: np.ndarray, cross: float,
                 cross_draws: np.ndarray, state: str, confidence: float, rng: np.random.Generator,
                 draws: int) -> Placement:
    """A draft measured elsewhere, placed as the draft beside the map is; its self-check draws its
    measured log speedup as a normal with the sd its own interval implies (a record without a speedup:
    placed, not checked)."""
    at = _at(g.acceptance, x, fit, fit_draws, cross, cross_draws, state, confidence, rng, draws)
    s = g.speedup
    if s is None or s.value is None:
        return Placement(g.label, at.a, None, at.predicted, at.headroom, at.limit, None, None, given=True)
    sd = 0.0
    if s.low is not None and s.high is not None and 0 < s.low <= s.high:
        sd = (math.log(s.high) - math.log(s.low)) / (2 * _normal_quantile(0.5 + g.confidence / 2))
    measured_draws = math.log(s.value) + sd * rng.standard_normal(draws)
    d_low, d_high = _quantiles(measured_draws - at.predicted_draws, confidence)
    d = math.log(s.value) - at.pred
    return Placement(g.label, at.a, s, at.predicted, at.headroom, at.limit,
                     Range(math.exp(d), math.exp(d_low), math.exp(d_high)), d_low <= 0.0 <= d_high, given=True)


def _normal_quantile(p: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)
