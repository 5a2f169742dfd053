"""Looks at a pair of points measured until decided: Holm's step-down, the Bonferroni weights of the
looks (alpha spending), every look at every pair computed once, and a pair's anytime p-values."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from llama4spec.stats.noise import Noise
from llama4spec.stats.statistic import BlockLogRatio, Estimate, Statistic
from llama4spec.stats.tdist import special

MIN_REPEATS = 2
MAX_REPEATS = 10
REPEATS_CAP = 100  # the largest max_repeats accepted
# Share of alpha spent on the looks before the last. Each 0.01 of it costs about 0.12 points of
# power at the last look (80% power, one comparison; benchmarks/decide_power.py measures 0.1 to
# 0.3 points for 0.02); 0.02 still decides a comparison clear by 3.8 (two points) to 4.4 (five
# points) standard errors at the first look. Equal shares (plain Bonferroni) cost 25 points.
EARLY_LOOKS_ALPHA = 0.02


def holm(p_values, alpha: float) -> np.ndarray:
    """Holm's step-down over the last axis: which hypotheses are rejected (NaN counts as 1).

    Sorted ascending, p_(i) is rejected while every p_(j), j <= i, is at most alpha / (m - j + 1).
    """
    p = np.nan_to_num(np.asarray(p_values, dtype=float), nan=1.0)
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    passed = np.cumprod(np.take_along_axis(p, order, -1) <= alpha / (m - np.arange(m)), axis=-1).astype(bool)
    rejected = np.zeros_like(passed)
    np.put_along_axis(rejected, order, passed, -1)
    return rejected


def look_weights(min_repeats: int, max_repeats: int, early_share: float = EARLY_LOOKS_ALPHA) -> np.ndarray:
    """Bonferroni weights of the looks min_repeats..max_repeats (they sum to 1)."""
    n = max_repeats - min_repeats + 1
    if n == 1:
        return np.ones(1)
    w = np.full(n, early_share / (n - 1))
    w[-1] = 1.0 - early_share
    return w


@dataclass(frozen=True)
class Looks:
    """Every look at every pair of points, computed once: ``sequential.decide`` reads only looks reached.

    Arrays are [sweeps, pairs, looks] (pair u is points first[u] against second[u]); ``means`` is
    [sweeps, points, runs], the mean of each point's first r + 1 values.
    """

    first: np.ndarray
    second: np.ndarray
    estimate: Estimate
    t: np.ndarray
    anytime_up: np.ndarray  # min over looks so far of p_l / w_l: "first is faster than second"
    anytime_down: np.ndarray  # the same for "second is faster than first"
    means: np.ndarray
    weights: np.ndarray
    min_repeats: int
    max_repeats: int


def looks(values: np.ndarray, statistic: Statistic, min_repeats: int = MIN_REPEATS,
          max_repeats: int = MAX_REPEATS, early_share: float = EARLY_LOOKS_ALPHA, shares=None) -> Looks:
    """The look table of ``values`` [sweeps, points, runs] (on the statistic's scale; NaN for runs
    not measured: looks needing them come out NaN and are never read). ``shares`` (the same shape,
    ``start_shares`` of each point's runs) when a point's runs come from more than one server start."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 3 or values.shape[-1] < max_repeats:
        raise ValueError(f"values must be [sweeps, points, >= max_repeats ({max_repeats})], not {values.shape}")
    values = values[:, :, :max_repeats]
    share = np.ones(values.shape) if shares is None else np.asarray(shares, float)[:, :, :max_repeats]
    first, second = np.triu_indices(values.shape[1], 1)
    per_look = [statistic.compare(values[:, first, :n], values[:, second, :n], share[:, first, n - 1],
                                  share[:, second, n - 1])
                for n in range(min_repeats, max_repeats + 1)]
    est = Estimate(*(np.stack([getattr(e, f) for e in per_look], -1) for f in ("center", "se", "df")))
    t = est.t()
    weights = look_weights(min_repeats, max_repeats, early_share)
    stdtr = special().stdtr
    with np.errstate(divide="ignore", invalid="ignore"):
        up, down = (np.minimum(np.fmin.accumulate(stdtr(est.df, s * t) / weights, axis=-1), 1.0) for s in (-1, 1))
    means = np.cumsum(values, axis=-1) / np.arange(1, values.shape[-1] + 1)
    return Looks(first, second, est, t, up, down, means, weights, min_repeats, max_repeats)


@dataclass(frozen=True)
class PairLook:
    """One pair at its look min(n_a, n_b), the first l runs a side in the order measured."""

    up: float  # anytime p-value of "first is faster than second"
    down: float  # of "second is faster than first"
    estimate: Estimate
    weight: float  # the look's share of alpha
    runs: int  # l


def pair_look(a, b, statistic: Statistic, min_repeats: int, max_repeats: int, share_a=None,
              share_b=None) -> PairLook:
    """The anytime p-values of one pair of points measured until decided (values on the
    statistic's scale, in the order measured; ``share_*``: ``start_shares`` of each side's runs),
    exactly as ``sequential.decide`` reads them: what a report of such a sweep compares by."""
    a, b = np.asarray(a, float)[:max_repeats], np.asarray(b, float)[:max_repeats]
    n = min(a.size, b.size)
    if n < min_repeats:
        raise ValueError(f"a look needs at least min_repeats ({min_repeats}) runs a side")
    values = np.full((1, 2, max_repeats), np.nan)
    values[0, 0, :a.size], values[0, 1, :b.size] = a, b
    shares = np.ones(values.shape)
    for i, share in enumerate((share_a, share_b)):
        if share is not None:
            shares[0, i, :len(share[:max_repeats])] = share[:max_repeats]
    table = looks(values, statistic, min_repeats, max_repeats, shares=shares)
    k = n - min_repeats
    est = Estimate(*(getattr(table.estimate, f)[0, 0, k] for f in ("center", "se", "df")))
    return PairLook(float(table.anytime_up[0, 0, k]), float(table.anytime_down[0, 0, k]), est,
                    float(table.weights[k]), n)


def block_look(blocks_a: Sequence[Sequence[float]], min_blocks: int, max_blocks: int, noise: Noise | None = None,
               blocks_b: Sequence[Sequence[float]] | None = None) -> tuple[PairLook, str]:
    """Back-to-back blocks measured until decided (``repeats: auto`` with ``design: interleaved``):
    the block means are the observations, a look after each block. ``blocks_a``: a candidate's
    blocks, each its per-pair ratios over no speculation, in the order measured: against no
    speculation by ``BlockLogRatio`` on the first l blocks. With ``blocks_b`` (another candidate's
    blocks): the two by the difference of their mean block log ratios, Welch's t on the first l
    block means a side. At the look l = the blocks so far (min over the sides, at most
    ``max_blocks``), the anytime p-values: min over the looks min_blocks..l of p / w (the weights of
    ``look_weights``), valid whenever the blocks stop. Returns the look and what it rests on."""
    n = min(len(blocks_a), len(blocks_b) if blocks_b is not None else len(blocks_a), max_blocks)
    if n < min_blocks:
        raise ValueError(f"a look needs at least min_blocks ({min_blocks}) blocks a side")
    weights, stdtr = look_weights(min_blocks, max_blocks), special().stdtr
    up = down = math.inf
    for k, l in enumerate(range(min_blocks, n + 1)):
        try:
            est, basis = _block_estimate(blocks_a[:l], None if blocks_b is None else blocks_b[:l], noise)
        except ValueError:  # 2 blocks without a paired component: nothing known yet
            est, basis = Estimate(np.asarray(0.0), np.asarray(math.inf), np.asarray(0.0)), f"{l} blocks: no estimate"
        t, df = float(est.t()), float(est.df)
        p_up, p_down = ((float(stdtr(df, s * t)) if df > 0 else 1.0) for s in (-1, 1))
        up, down = min(up, p_up / weights[k]), min(down, p_down / weights[k])
    look = PairLook(min(up, 1.0), min(down, 1.0), est, float(weights[n - min_blocks]), n)
    return look, f"{basis}, a look after each block from {min_blocks}"


def _block_estimate(a, b, noise: Noise | None) -> tuple[Estimate, str]:
    """One look's estimate: a candidate's blocks against no speculation, or two candidates' blocks."""
    if b is None:
        return BlockLogRatio(noise).blocks(a)
    ma, mb = (np.array([np.log(np.asarray(block, float)).mean() for block in side]) for side in (a, b))
    l = ma.size
    va, vb = ma.var(ddof=1) / l, mb.var(ddof=1) / l
    total = va + vb
    df = (total ** 2 / ((va ** 2 + vb ** 2) / (l - 1))) if total > 0 else math.inf
    return (Estimate(np.asarray(ma.mean() - mb.mean()), np.asarray(math.sqrt(total)), np.asarray(df)),
            f"{l} blocks a side: the spread of their block means ({df:.1f} df)")
