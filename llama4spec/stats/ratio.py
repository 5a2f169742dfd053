"""One setting against another as a ratio interval: from the noise components (``ratio_interval``),
by Welch's t or the paired t with the between-start term (``welch_ratio``, ``paired_ratio``), and
what another run or start would buy (``start_floor``, ``runs_to_settle``)."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from llama4spec.stats.components import log_runs
from llama4spec.stats.interval import CONFIDENCE, Interval, log_interval
from llama4spec.stats.looks import REPEATS_CAP
from llama4spec.stats.noise import Noise
from llama4spec.stats.statistic import Estimate, LogRatio, PairedLogRatio, Statistic, with_between
from llama4spec.stats.tdist import satterthwaite, t_quantile


def start_share(starts: Sequence[int]) -> float:
    """How much of one start's offset the mean of these runs carries: sum_j n_j^2 / n^2."""
    n = len(starts)
    if not n:
        return 1.0
    _, counts = np.unique(np.asarray(starts), return_counts=True)
    return float((counts.astype(float) ** 2).sum() / n ** 2)


def comparison_variance(noise: Noise, n_a: int, n_b: int, share_a: float = 1.0, share_b: float = 1.0
                        ) -> tuple[float, float]:
    """Variance of a mean log difference and its Satterthwaite df from the components."""
    b = noise.between.var * (share_a + share_b)
    w = noise.within.var * (1.0 / n_a + 1.0 / n_b)
    return b + w, satterthwaite([(b, noise.between.df), (w, noise.within.df)])



def ratio_interval(a: Sequence[float], b: Sequence[float], noise: Noise, confidence: float = CONFIDENCE,
                   starts_a: Sequence[int] | None = None, starts_b: Sequence[int] | None = None) -> Interval:
    """a's runs against b's (throughputs; ``starts_*`` each run's server start, absent: one start),
    the variance from ``noise`` (not from these runs alone: the within part is pooled over a
    sweep's settings, the between part is what runs against one start cannot average out)."""
    ya, yb = log_runs(a), log_runs(b)
    if ya.size < 1 or yb.size < 1:
        raise ValueError("a ratio interval needs a run a side")
    sa = start_share(starts_a) if starts_a is not None else 1.0
    sb = start_share(starts_b) if starts_b is not None else 1.0
    var, df = comparison_variance(noise, ya.size, yb.size, sa, sb)
    return log_interval(float(ya.mean() - yb.mean()), math.sqrt(var), df, confidence, "components", noise.text())


def paired_ratio(numerator: Sequence[float], denominator: Sequence[float], confidence: float = CONFIDENCE,
                 noise: Noise | None = None) -> Interval:
    """The t interval of the mean log ratio of back-to-back pairs (run i of each side), as a ratio
    interval, the between-start term from ``noise``."""
    return _ratio(PairedLogRatio(noise), numerator, denominator, confidence)


def _interval(statistic: Statistic, est: Estimate, confidence: float) -> Interval:
    q = float(t_quantile(float(est.df), 0.5 + confidence / 2))
    center, half = float(est.center), q * float(est.se)
    if not math.isfinite(half):  # nothing known of the between-start term: no bound
        return Interval(float(statistic.scale(center)), 0.0, math.inf, confidence, statistic.method, df=float(est.df))
    return Interval(float(statistic.scale(center)), float(statistic.scale(center - half)),
                    float(statistic.scale(center + half)), confidence, statistic.method, df=float(est.df))


def _ratio(statistic: Statistic, numerator, denominator, confidence: float, shares=(1.0, 1.0)) -> Interval:
    a, b = statistic.values(np.asarray(numerator, float)), statistic.values(np.asarray(denominator, float))
    if a.size < 2 or b.size < 2 or np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("a ratio interval needs at least 2 positive, finite runs a side")
    return _interval(statistic, statistic.compare(a, b, *shares), confidence)


def welch_ratio(numerator: Sequence[float], denominator: Sequence[float], confidence: float = CONFIDENCE,
                noise: Noise | None = None, shares: tuple[float, float] = (1.0, 1.0)) -> Interval:
    """Welch's t interval of the difference of mean log throughputs, as a ratio interval, the
    between-start term from ``noise`` (``shares``: each side's ``start_shares``, 1 for runs of one
    server start)."""
    return _ratio(LogRatio(noise), numerator, denominator, confidence, shares)


def start_floor(level: float, noise: Noise | None, shares: float = 2.0) -> float:
    """The smallest difference of mean logs that runs against these server starts can ever decide
    at a one-sided ``level``: ``t_(between df)(1 - level) * sqrt(shares * between)``, the
    between-start term alone (``shares``: the two sides' start shares summed, 2 when each side is
    one start). Below it only more server starts help."""
    var, df = LogRatio(noise).between
    if var <= 0:
        return 0.0
    return float(t_quantile(df, 1.0 - level)) * math.sqrt(shares * var)


def start_shares(starts) -> np.ndarray:
    """How much of one server start's offset the mean of a point's first n runs carries, for every
    n: ``sum_j c_j(n)^2 / n^2``, c_j(n) the runs of start j among the first n (1 for one start,
    1/m for n runs spread evenly over m starts). ``starts`` [..., runs]: each run's start (any
    integers; negative for a run not measured, which counts for nothing)."""
    starts = np.asarray(starts)
    n = np.cumsum(starts >= 0, axis=-1).astype(float)
    squares = np.zeros(starts.shape, dtype=float)
    for s in np.unique(starts[starts >= 0]):
        squares += np.cumsum(starts == s, axis=-1).astype(float) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, squares / n ** 2, 1.0)


def runs_to_settle(var_a: float, var_b: float, center: float, level: float, noise: Noise | None = None,
                   start: int = 2, cap: int = REPEATS_CAP, shares: float = 2.0) -> int | None:
    """The runs per side, from ``start`` to ``cap``, at which Welch's one-sided test at ``level``
    would decide a difference ``center`` (on the log scale), were each side's per-run variance
    (``var_a``, ``var_b``) and the difference to stay as measured: the smallest n with
    ``|center| > t_(df_n)(1 - level) * se_n``, ``se_n^2 = (var_a + var_b) / n + shares between`` and
    Satterthwaite's df over the three terms (``noise``'s between-start component on its df). None
    when no n up to ``cap`` does: always when ``|center|`` is at most ``start_floor``, the
    between-start term alone, which only more server starts shrink."""
    n = np.arange(max(start, 2), cap + 1, dtype=float)
    if n.size == 0 or center == 0:
        return None
    total, df = with_between([(var_a / n, n - 1), (var_b / n, n - 1)], shares, *LogRatio(noise).between)
    ok = abs(center) > t_quantile(df, 1.0 - level) * np.sqrt(total)
    return int(n[np.argmax(ok)]) if ok.any() else None


def interval_at(statistic: Statistic, est: Estimate, confidence: float) -> Interval:
    """An estimate's two-sided interval on the reported scale."""
    return _interval(statistic, est, confidence)
