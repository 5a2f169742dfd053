"""Back-to-back blocks: each block's mean log ratio the unit, with its interval and any trend over
the blocks' order."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from llama4spec.stats.components import log_runs
from llama4spec.stats.interval import CONFIDENCE, Interval, log_interval
from llama4spec.stats.noise import Noise
from llama4spec.stats.tdist import satterthwaite


def block_estimate(blocks: Sequence[Sequence[float]], noise: Noise | None = None) -> tuple[float, float, float, str]:
    """Back-to-back blocks: each block's per-pair ratios (candidate over baseline, run i of each,
    measured in turn on servers started together). A block's mean log ratio is the unit: the mean
    of the J block means, its standard error and df, and what they rest on. With 3 or more blocks
    the standard error comes from the blocks' own spread (t on J - 1 df), whatever the split
    between start and run noise. With 1 or 2 blocks the variance of a block's mean comes from
    ``noise``: ``2 between + paired / K`` a block, on Satterthwaite's df (ValueError without a
    paired component)."""
    means = np.array([log_runs(b).mean() for b in blocks if len(b)])
    j = means.size
    if j == 0:
        raise ValueError("no block has a pair")
    center = float(means.mean())
    if j >= 3:
        return (center, float(means.std(ddof=1) / math.sqrt(j)), float(j - 1),
                f"{j} blocks' own spread ({j - 1} df)" + block_trend(means))
    if noise is None or noise.paired is None:
        raise ValueError(f"{j} block(s): 3 or more give an interval of their own; fewer need a noise estimate "
                         "with a paired component")
    k = float(np.mean([len(b) for b in blocks if len(b)]))
    b_term, p_term = 2 * noise.between.var / j, noise.paired.var / (k * j)
    df = float(satterthwaite([(b_term, noise.between.df), (p_term, noise.paired.df)]))
    text = (f"{j} block{'s' if j != 1 else ''}: the noise components (between-start sd {noise.between.sd:.3f}, "
            f"paired within-start sd {noise.paired.sd:.3f}; {df:.1f} df)")
    return center, math.sqrt(b_term + p_term), df, text


TREND_LEVEL = 0.05  # a trend of the block ratios over their order is reported below this p-value


def block_trend(means: Sequence[float] | np.ndarray) -> str:
    """A clause for the blocks' mean log ratios in time order when they trend (least-squares slope on
    the block's place, two-sided t on J - 2 df, p below ``TREND_LEVEL``; 4 blocks at least), else
    "". The interval from the blocks' spread stays honest under a trend, only wider; the clause
    says the speedup itself moved over the run, so their mean is an average over the machine's
    states (docs/noise.md, "Deciding a small speedup on this machine")."""
    from scipy import stats

    y = np.asarray(means, dtype=float)
    if y.size < 4 or float(np.ptp(y)) == 0.0:
        return ""
    fit = stats.linregress(np.arange(y.size, dtype=float), y)
    if not (math.isfinite(fit.pvalue) and fit.pvalue < TREND_LEVEL):
        return ""
    return (f"; the blocks' ratio trended over the run ({math.expm1(fit.slope):+.1%} a block, p = {fit.pvalue:.2g}): "
            "the speedup moved with the machine's state")


def block_interval(blocks: Sequence[Sequence[float]], confidence: float = CONFIDENCE,
                   noise: Noise | None = None) -> Interval:
    """``block_estimate`` as an interval at ``confidence``."""
    center, se, df, text = block_estimate(blocks, noise)
    own = len([b for b in blocks if len(b)]) >= 3
    return log_interval(center, se, df, confidence, "blocks", (text if own else noise.text() if noise else ""))
