"""Variance components from the runs at hand (one-way random-effects ANOVA on log throughput, pooled
over settings), and a prior pooled with them by degrees of freedom (pure)."""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from llama4spec.stats.noise import CALIBRATE, FROM_DATA, Component, Noise


def log_runs(runs: Sequence[float]) -> np.ndarray:
    x = np.asarray(list(runs), dtype=float)
    if x.size and not np.all(np.isfinite(x) & (x > 0)):
        raise ValueError(f"throughputs must be positive and finite, not {x.tolist()}")
    return np.log(x)



def components(y: np.ndarray, source: str = FROM_DATA) -> Noise:
    """One-way random-effects ANOVA of log throughputs ``y`` [..., settings, starts, runs] (NaN: no
    such run), pooled over settings, elementwise over the leading axes (many sweeps at once).
    within = MSW on sum(n_j - 1) df; between = max(MSB - MSW, 0) / n0 (n0 per setting
    (N - sum n_j^2 / N) / (a - 1), averaged by df) on Satterthwaite's df, 0 when clamped; a setting
    with one start gives within df only."""
    y = np.asarray(y, float)
    ok = ~np.isnan(y)
    n = ok.sum(-1).astype(float)  # [..., S, J]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(n > 0, np.where(ok, y, 0.0).sum(-1) / n, 0.0)
    ssw = np.where(ok, (np.where(ok, y, 0.0) - mean[..., None]) ** 2, 0.0).sum((-1, -2, -3))
    dfw = np.where(n > 0, n - 1, 0.0).sum((-1, -2))
    a = (n > 0).sum(-1).astype(float)  # starts per setting
    big_n = n.sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        grand = np.where(big_n > 0, (n * mean).sum(-1) / big_n, 0.0)
        n0_part = np.where(a >= 2, big_n - (n ** 2).sum(-1) / big_n, 0.0)
    ssb_s = (n * (mean - grand[..., None]) ** 2).sum(-1)
    several = a >= 2
    ssb = np.where(several, ssb_s, 0.0).sum(-1)
    dfb = np.where(several, a - 1, 0.0).sum(-1)
    n0w = n0_part.sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        msw = np.where(dfw > 0, ssw / dfw, 0.0)
        msb = np.where(dfb > 0, ssb / dfb, 0.0)
        n0 = np.where(dfb > 0, n0w / dfb, 1.0)
        estimable = (dfb > 0) & (dfw > 0)
        var = np.where(estimable, np.maximum(msb - msw, 0.0) / n0, 0.0)
        df = np.where(estimable & (var > 0), (msb - msw) ** 2 / (msb ** 2 / dfb + msw ** 2 / dfw), 0.0)
    out = (var, df, msw, dfw, n0)
    if np.ndim(var) == 0:
        out = tuple(float(x) for x in out)
    var, df, msw, dfw, n0 = out
    return Noise(Component(var, df, source), Component(msw, dfw, source), n0=n0)


def estimate(settings: Mapping[str, Sequence[Sequence[float]]], source: str = FROM_DATA,
             paired: Sequence[Sequence[float]] = ()) -> Noise:
    """Variance components from the runs at hand: setting -> its starts -> each start's throughputs
    (positive), pooled over the settings (assumed to share the machine's noise; ``components``).
    ``paired``: back-to-back blocks, each block's per-pair ratios, for the paired within-start
    variance of a pair's log ratio (pooled over blocks, df sum(K - 1)). Where the data cannot
    estimate a component its df is 0 (``combine`` then takes the prior's)."""
    starts = [[log_runs(s) for s in setting if len(s)] for setting in settings.values()]
    shape = (max(len(s) for s in starts) if starts else 0,
             max((len(x) for s in starts for x in s), default=0))
    y = np.full((len(starts), *shape), np.nan)
    for i, setting in enumerate(starts):
        for j, logs in enumerate(setting):
            y[i, j, :logs.size] = logs
    noise = components(y, source) if y.size else Noise(Component(0.0, 0.0, source), Component(0.0, 0.0, source))
    d = [log_runs(b) for b in paired if len(b) >= 2]
    dfp = sum(len(x) - 1 for x in d)
    if dfp:
        pair = Component(sum(float(((x - x.mean()) ** 2).sum()) for x in d) / dfp, float(dfp), source)
        noise = Noise(noise.between, noise.within, pair, noise.n0)
    return noise


def _pool(a: Component | None, b: Component | None) -> Component | None:
    """Two estimates of one component pooled by df (elementwise): a known one (inf df) stands, one of
    0 df counts for nothing."""
    if a is None or b is None:
        return a if b is None else b
    da, db = np.asarray(a.df, float), np.asarray(b.df, float)
    df = da + db
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = np.where(df > 0, (da * a.var + db * b.var) / df, a.var)
    var = np.where(np.isinf(da), a.var, np.where(np.isinf(db), b.var, pooled))
    df = np.where(np.isinf(da), da, np.where(np.isinf(db), db, df))
    source = a.source if not np.any(db > 0) else b.source if not np.any(da > 0) else f"{a.source} + {b.source}"
    if np.ndim(var) == 0:
        var, df = float(var), float(df)
    return Component(var, df, source)


def combine(prior_noise: Noise | None, data: Noise) -> Noise:
    """A profile or hardware prior as prior information, pooled with the data's estimate by df
    (each component separately); where the data has 0 df the prior stands, where there is no prior
    the data does. A provisional prior stays provisional only if the data cannot estimate the
    between-start part."""
    if prior_noise is None:
        return data
    between = _pool(prior_noise.between, data.between)
    still = prior_noise.provisional if not np.any(np.asarray(data.between.df) > 0) else None
    return Noise(between, _pool(prior_noise.within, data.within), _pool(prior_noise.paired, data.paired),
                 n0=data.n0, provisional=still)


NO_PRIOR = ("no noise profile or recorded prior for this hardware, and no setting measured over two or more "
            f"server starts to estimate the between-start spread; {CALIBRATE} and pass it as noise: PATH")


def by_start(values: Sequence[float], starts: Sequence[int] | None = None) -> list[list[float]]:
    """A setting's usable runs (positive, finite) grouped by their server start (``starts``, aligned
    with ``values``; absent or misaligned: one start)."""
    values = list(values)
    starts = list(starts) if starts is not None and len(starts) == len(values) else [0] * len(values)
    groups: dict[int, list[float]] = {}
    for v, s in zip(values, starts):
        if v is not None and not isinstance(v, bool) and 0 < v < math.inf:
            groups.setdefault(s, []).append(float(v))
    return list(groups.values())


def pooled(prior_noise: Noise | None, runs: Mapping[str, Sequence[float]],
           starts: Mapping[str, Sequence[int]] | None = None, paired: Sequence[Sequence[float]] = ()) -> Noise:
    """The noise of a set of settings' comparisons: the components estimated from their runs
    (``estimate``; the between-start part only from settings with runs of two or more starts),
    combined by df with ``prior_noise`` (a profile, or the hardware's recorded figures). Without a
    prior and without the starts to estimate it, the between-start part is 0 and said to be
    provisional. ``paired``: back-to-back blocks' per-pair ratios (``estimate``)."""
    data = estimate({key: by_start(values, (starts or {}).get(key)) for key, values in runs.items()}, paired=paired)
    if prior_noise is not None:
        return combine(prior_noise, data)
    if float(data.between.df) > 0:
        return data
    return Noise(data.between, data.within, data.paired, data.n0, NO_PRIOR)
