"""The noise a comparison carries, estimated where the speed is measured (pure, no I/O but noise.json).

Runs against one server start are not replicates of a setting: each start carries an offset of its
own (where the engine landed, the load while it was up) that its runs share. On the log scale a
run of setting s, start j, run i is ``y = mu_s + b_j + e_ji``, with ``b ~ N(0, between)`` and
``e ~ N(0, within)`` (Kalibera and Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013).
``Noise`` holds the two log-variances (and, for back-to-back pairs, the paired within-start
variance of a pair's log ratio), each with its degrees of freedom and where it came from:

- ``estimate``: one-way random-effects ANOVA on log throughput, pooled over settings (sums of
  squares and df added): within = MSW on sum(n_j - 1) df; between = (MSB - MSW) / n0, clamped at
  0, with Satterthwaite's df ``(MSB - MSW)^2 / (MSB^2 / df_B + MSW^2 / df_W)``;
- ``combine``: a profile (``noise.json``) or a hardware prior as prior information, pooled with
  the data by df;
- ``ratio_interval``: two settings' mean log difference, variance ``between * (share_a +
  share_b) + within * (1/n_a + 1/n_b)`` (shares: ``sum_j n_j^2 / n^2``, 1 for one start), on
  Satterthwaite's df;
- ``equivalent``: two one-sided tests against +-margin;
- ``block_interval``: back-to-back blocks, each block's mean log ratio the unit (t on J - 1 df);
- ``runs_per_start``, ``runs_per_block``, ``starts_for``: Kalibera and Jones' allocation from costs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from llama4spec.errors import UserError

CONFIDENCE = 0.95
MARGIN = 0.02  # equivalence: within +-2% of each other
FROM_DATA = "estimated from this sweep's starts"
MAX_RUNS_PER_START = 30  # the allocation's cap when the between-start component is 0
FORMAT = 1  # noise.json's format
CALIBRATE = "run `llama4spec calibrate` on this machine to measure a profile"


def _special():
    from scipy import special  # loaded on first use: importing scipy takes ~0.4 s

    return special


def profile_source(path: Path | str) -> str:
    return f"profile {path}"


# -- the estimate object --------------------------------------------------------------------------

@dataclass(frozen=True)
class Component:
    """One log-variance with its degrees of freedom (inf: taken as known) and its source."""

    var: float
    df: float
    source: str

    @property
    def sd(self) -> float:
        return math.sqrt(self.var)

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        """The sd's chi-square interval on its df (approximate for a Satterthwaite df)."""
        if math.isinf(self.df):
            return self.sd, self.sd
        if not self.df:
            return 0.0, math.inf
        from scipy.stats import chi2

        a = (1 - confidence) / 2
        return (math.sqrt(self.df * self.var / chi2.ppf(1 - a, self.df)),
                math.sqrt(self.df * self.var / chi2.ppf(a, self.df)))

    def text(self, source: bool = True) -> str:
        df = "known" if math.isinf(self.df) else f"{self.df:.1f} df"
        return f"{self.sd:.3f} ({df}; {self.source})" if source else f"{self.sd:.3f} ({df})"


@dataclass(frozen=True)
class Noise:
    """Between-start and within-start log-variance (and the paired within-start variance of a
    back-to-back pair's log ratio), each with its df and source. ``provisional``: why an answer
    resting on it is provisional (no profile and no data to estimate it), None otherwise."""

    between: Component
    within: Component
    paired: Component | None = None
    n0: float = 1.0  # runs per start of the data the between part was estimated from (its MSB coefficient)
    provisional: str | None = None

    @property
    def source(self) -> str:
        sources = dict.fromkeys(c.source for c in (self.between, self.within, self.paired) if c is not None)
        return "; ".join(sources)

    def text(self) -> str:
        one = len({c.source for c in (self.between, self.within, self.paired) if c is not None}) == 1
        parts = [f"between-start sd {self.between.text(not one)}", f"within-start sd {self.within.text(not one)}"]
        if self.paired is not None:
            parts.append(f"paired within-start sd {self.paired.text(not one)}")
        return (", ".join(parts) + (f" (source: {self.source})" if one else "")
                + (f" [provisional: {self.provisional}]" if self.provisional else ""))


def _df_json(df: float) -> float | str:
    return "known" if math.isinf(df) else float(df)


def noise_record(noise: Noise | None) -> dict | None:
    """A noise estimate as JSON-able data: each component's sd, variance, df ("known" for an
    infinite df) and source; why it is provisional, when it is."""
    if noise is None:
        return None

    def one(c: Component | None):
        return None if c is None else {"sd": c.sd, "var": c.var, "df": _df_json(c.df), "source": c.source}

    return {"between": one(noise.between), "within": one(noise.within), "paired": one(noise.paired),
            "source": noise.source, "provisional": noise.provisional}


def noise_from_record(data) -> Noise | None:
    """``noise_record``'s data read back (a run directory's plan.json: input, checked through
    ``noise_profile.PriorRecord``: every sd in [0, 10], every df from 0 to 1e6 or known): None where
    it is not one (``noise_profile.prior_problem`` says why)."""
    from llama4spec.analysis.noise_profile import PriorRecord, prior_problem

    if not isinstance(data, Mapping) or prior_problem(data) is not None:
        return None
    rec = PriorRecord.model_validate(data)

    def one(c) -> Component | None:
        return None if c is None else Component(c.sd ** 2, math.inf if c.df == "known" else c.df, c.source[:300])

    why = rec.provisional
    return Noise(one(rec.between), one(rec.within), one(rec.paired), provisional=why[:500] if why else None)


def prior(between_sd: float, within_sd: float, source: str, between_df: float = math.inf,
          within_df: float = math.inf, paired_sd: float | None = None, paired_df: float = math.inf,
          provisional: str | None = None) -> Noise:
    """A Noise from figures recorded elsewhere (a hardware config's prior, a profile)."""
    paired = None if paired_sd is None else Component(paired_sd ** 2, paired_df, source)
    return Noise(Component(between_sd ** 2, between_df, source), Component(within_sd ** 2, within_df, source),
                 paired, provisional=provisional)


def provisional(device: str) -> Noise:
    """No profile and no data to estimate with on an accelerator: zero between-start noise, said to be
    provisional (a CPU figure is never applied to a GPU silently)."""
    why = (f"no noise profile for this {device} and too few server starts to estimate the between-start "
           f"spread; {CALIBRATE} and pass it as noise: PATH")
    return Noise(Component(0.0, 0.0, "none (uncalibrated)"), Component(0.0, 0.0, "none (uncalibrated)"),
                 provisional=why)


def _logs(runs: Sequence[float]) -> np.ndarray:
    x = np.asarray(list(runs), dtype=float)
    if x.size and not np.all(np.isfinite(x) & (x > 0)):
        raise ValueError(f"throughputs must be positive and finite, not {x.tolist()}")
    return np.log(x)


def _satterthwaite(terms) -> np.ndarray | float:
    """df of a sum of variance terms (value, df), elementwise; a term of inf df counts as exact, a
    positive term of 0 df makes the sum's df 0 (nothing known)."""
    total = sum(np.asarray(v, float) for v, _ in terms)
    den, unknown = 0.0, False
    for v, d in terms:
        v, d = np.asarray(v, float), np.asarray(d, float)
        with np.errstate(divide="ignore", invalid="ignore"):
            den = den + np.where((v > 0) & (d > 0) & np.isfinite(d), v * v / d, 0.0)
        unknown = unknown | ((v > 0) & (d <= 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(unknown, 0.0, np.where(den > 0, total * total / den, np.inf))
    return float(df) if np.ndim(df) == 0 else df


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
    starts = [[_logs(s) for s in setting if len(s)] for setting in settings.values()]
    shape = (max(len(s) for s in starts) if starts else 0,
             max((len(x) for s in starts for x in s), default=0))
    y = np.full((len(starts), *shape), np.nan)
    for i, setting in enumerate(starts):
        for j, logs in enumerate(setting):
            y[i, j, :logs.size] = logs
    noise = components(y, source) if y.size else Noise(Component(0.0, 0.0, source), Component(0.0, 0.0, source))
    d = [_logs(b) for b in paired if len(b) >= 2]
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


# -- comparisons ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """a against b: the ratio of geometric means with its two-sided interval, on ``df``."""

    ratio: float
    low: float
    high: float
    confidence: float
    df: float
    center: float  # log ratio
    se: float
    noise: str  # the estimate it used (``Noise.text``)

    def excludes_one(self) -> bool:
        return self.low > 1.0 or self.high < 1.0


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
    return b + w, _satterthwaite([(b, noise.between.df), (w, noise.within.df)])


def t_quantile(df, p: float):
    """Student's t quantile, elementwise: the normal one at inf df, inf at 0 df."""
    sp, df = _special(), np.asarray(df, float)
    safe = np.where((df > 0) & np.isfinite(df), df, 1.0)
    q = np.where(df <= 0, np.inf, np.where(np.isinf(df), sp.ndtri(p), sp.stdtrit(safe, p)))
    return float(q) if q.ndim == 0 else q




def ratio_interval(a: Sequence[float], b: Sequence[float], noise: Noise, confidence: float = CONFIDENCE,
                   starts_a: Sequence[int] | None = None, starts_b: Sequence[int] | None = None) -> Interval:
    """a's runs against b's (throughputs; ``starts_*`` each run's server start, absent: one start),
    the variance from ``noise`` (not from these runs alone: the within part is pooled over a
    sweep's settings, the between part is what runs against one start cannot average out)."""
    ya, yb = _logs(a), _logs(b)
    if ya.size < 1 or yb.size < 1:
        raise ValueError("a ratio interval needs a run a side")
    sa = start_share(starts_a) if starts_a is not None else 1.0
    sb = start_share(starts_b) if starts_b is not None else 1.0
    var, df = comparison_variance(noise, ya.size, yb.size, sa, sb)
    return _interval(float(ya.mean() - yb.mean()), math.sqrt(var), df, confidence, noise)


def _interval(center: float, se: float, df: float, confidence: float, noise: Noise | None, text: str = "") -> Interval:
    half = t_quantile(df, 0.5 + confidence / 2) * se
    low, high = (math.exp(center - half), math.exp(center + half)) if math.isfinite(half) else (0.0, math.inf)
    return Interval(math.exp(center), low, high, confidence, df, center, se, text or (noise.text() if noise else ""))


@dataclass(frozen=True)
class Equivalence:
    equivalent: bool
    margin: float
    p_value: float  # the larger of the two one-sided p-values
    low: float  # the (1 - 2 alpha) interval: equivalent when it lies within [1/(1+m), 1+m]
    high: float


def equivalent(interval: Interval, margin: float = MARGIN, confidence: float = CONFIDENCE) -> Equivalence:
    """Two one-sided tests (Schuirmann 1987) at alpha = 1 - confidence each: the log ratio is
    above -log(1+margin) and below log(1+margin). Equivalent when both reject, i.e. when the
    1 - 2 alpha interval lies inside the margin."""
    check_margin(margin)
    bound = math.log1p(margin)
    sp = _special()
    if interval.se <= 0:
        p = 0.0 if abs(interval.center) < bound else 1.0
    elif not interval.df or interval.df <= 0:
        p = 1.0
    else:
        def cdf(t: float) -> float:
            return float(sp.stdtr(interval.df, t)) if math.isfinite(interval.df) else float(sp.ndtr(t))

        p = max(1 - cdf((interval.center + bound) / interval.se), cdf((interval.center - bound) / interval.se))
    alpha = 1 - confidence
    half = t_quantile(interval.df, 1 - alpha) * interval.se
    return Equivalence(p < alpha, margin, p, math.exp(interval.center - half), math.exp(interval.center + half))


def block_estimate(blocks: Sequence[Sequence[float]], noise: Noise | None = None) -> tuple[float, float, float, str]:
    """Back-to-back blocks: each block's per-pair ratios (candidate over baseline, run i of each,
    measured in turn on servers started together). A block's mean log ratio is the unit: the mean
    of the J block means, its standard error and df, and what they rest on. With 3 or more blocks
    the standard error comes from the blocks' own spread (t on J - 1 df), whatever the split
    between start and run noise. With 1 or 2 blocks the variance of a block's mean comes from
    ``noise``: ``2 between + paired / K`` a block, on Satterthwaite's df (ValueError without a
    paired component)."""
    means = np.array([_logs(b).mean() for b in blocks if len(b)])
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
    df = float(_satterthwaite([(b_term, noise.between.df), (p_term, noise.paired.df)]))
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
    return _interval(center, se, df, confidence, None if own else noise, text if own else "")


# -- how many starts and runs ---------------------------------------------------------------------

@dataclass(frozen=True)
class Design:
    starts: int  # per setting (or blocks)
    runs: int  # per start (or per block and side)
    why: str  # the design in one clause
    on: str = ""  # what it rests on (the noise), "" when ``why`` says it
    reached: bool = True  # False: even the most starts tried do not reach the precision asked for

    def text(self) -> str:
        """``why``, followed by what it rests on in brackets where that is apart."""
        return f"{self.why} ({self.on})" if self.on else self.why


def _kj(cost_ratio: float, low_var: float, high_var: float, cap: int) -> int:
    """Kalibera and Jones' optimal repetitions at the lower level (libkalibera ``optimalreps``):
    ceil(sqrt(cost_upper / cost_lower x T_lower^2 / T_upper^2)), at least 1, at most ``cap``."""
    if high_var <= 0:
        return cap
    reps = math.sqrt(cost_ratio * low_var / high_var)
    return cap if not reps < cap else max(1, math.ceil(reps))  # an infinite or NaN ratio: the cap


def runs_per_start(noise: Noise, start_s: float, run_s: float, cap: int = MAX_RUNS_PER_START) -> Design:
    """Runs per server start that buy the most precision per second: more runs while a start costs
    much against a run and the within-start part dominates, fewer where the between part does."""
    r = _kj(start_s / run_s, noise.within.var, noise.between.var, cap)
    why = (f"{r} runs a start: a start costs {start_s:.0f} s, a run {run_s:.0f} s; between-start sd "
           f"{noise.between.sd:.3f}, within {noise.within.sd:.3f}")
    if noise.between.var <= 0:
        why += f" (no between-start spread measured: runs alone shrink the noise, capped at {cap})"
    return Design(1, max(r, 2), why)


def runs_per_block(noise: Noise, pair_start_s: float, pair_run_s: float, cap: int = MAX_RUNS_PER_START) -> Design:
    """Back-to-back blocks: K* = ceil(sqrt((c_start_pair / c_run_pair) x paired / (2 between)))."""
    if noise.paired is None:
        raise ValueError("runs per block need the paired within-start component")
    k = _kj(pair_start_s / pair_run_s, noise.paired.var, 2 * noise.between.var, cap)
    return Design(1, max(k, 2), f"{max(k, 2)} runs a block: a start pair costs {pair_start_s:.0f} s, a run pair "
                                f"{pair_run_s:.0f} s; between-start sd {noise.between.sd:.3f}, paired within "
                                f"{noise.paired.sd:.3f}")


def starts_for(noise: Noise, precision: float, runs: int, confidence: float = CONFIDENCE, cap: int = 100) -> Design:
    """The starts per setting (each of ``runs`` runs) at which a comparison of two settings would
    reach a relative half-width ``precision`` (log(1 + precision)), the components as estimated:
    the smallest m with t(2(m - 1)) x sqrt(2 (between + within / runs) / m) <= log(1 + precision)."""
    check_precision(precision)
    target = math.log1p(precision)
    per = 2 * (noise.between.var + noise.within.var / runs)
    for m in range(2, cap + 1):
        if t_quantile(2 * (m - 1), 0.5 + confidence / 2) * math.sqrt(per / m) <= target:
            return Design(m, runs, f"{m} starts of {runs} runs a setting reach +-{100 * precision:g}% at "
                                   f"{100 * confidence:g}%", noise.text())
    return Design(cap, runs, f"even {cap} starts of {runs} runs do not reach +-{100 * precision:g}%", noise.text(),
                  reached=False)


def half_width(noise: Noise, runs: int, starts: int = 1, confidence: float = CONFIDENCE) -> float:
    """The expected relative half-width of a speedup between two settings, each measured from
    ``starts`` server starts of ``runs`` runs (the components as given, Satterthwaite's df)."""
    var, df = comparison_variance(noise, runs * starts, runs * starts, 1.0 / starts, 1.0 / starts)
    return math.expm1(t_quantile(df, 0.5 + confidence / 2) * math.sqrt(var))


def design_lines(noise: Noise, costs: tuple[float, float] | None, runs: tuple[int, int],
                 precision: float | None = None, confidence: float = CONFIDENCE,
                 max_repeats: int | None = None, starts: int | None = None) -> list[str]:
    """What a sweep on ``noise`` is expected to reach: with ``costs`` (seconds a server start, a
    run: a profile's), the runs a start that buy the most precision per second; the half-width of
    a speedup at one start a point with the sweep's fewest and most runs (``runs``); and the starts
    a comparison within ``precision`` needs (+-5% where none is asked for).

    With ``precision`` asked for (a sweep's ``precision`` key), also what those starts cost a
    setting where ``costs`` are known, and whether ``max_repeats`` (a ``repeats: auto`` rule's, the
    most runs a point gets over all its starts) caps a point below the runs they make, and whether
    ``starts`` (the server starts the sweep gives each setting) are fewer than the design's."""
    lo, hi = runs
    lines = []
    per_start = hi
    if costs is not None:
        best = runs_per_start(noise, *costs)
        lines.append(f"design: {best.why} (Kalibera and Jones' rule)")
        per_start = best.runs
    m = starts if isinstance(starts, int) and starts > 1 else 1  # the sweep's starts: N
    spans = ", ".join(f"+-{100 * half_width(noise, n, m, confidence):.1f}% at {n} runs" + ("" if m == 1 else " a start")
                      for n in dict.fromkeys((lo, hi)))
    each = "one server start each" if m == 1 else f"{m} server starts each"
    need = starts_for(noise, PRECISION if precision is None else precision, per_start, confidence)
    lines.append(f"expected precision: a speedup of two points, {each}: {spans} "
                 f"({100 * confidence:g}% interval); {need.why}")
    return lines if precision is None else lines + _asked(need, costs, precision, max_repeats, starts)


PRECISION = 0.05  # the relative half-width a design is stated for where none is asked for


def _block_parts(noise: Noise) -> tuple[float, float, str]:
    """A block's paired within-start variance and df: the noise's paired component, else twice the
    within-start variance (a pair's log ratio of two independent runs), and the words for which."""
    if noise.paired is not None:
        return noise.paired.var, noise.paired.df, "paired within-start"
    return 2 * noise.within.var, noise.within.df, "paired within-start taken as twice the within-start variance"


def block_half_width(noise: Noise, blocks: int, runs: int, confidence: float = CONFIDENCE) -> float:
    """The expected relative half-width of a speedup from ``blocks`` back-to-back blocks of ``runs``
    pairs each: a block mean's variance ``2 between + paired / runs``; t on blocks - 1 df from 3
    blocks on (the blocks' own spread), on the components' Satterthwaite df below."""
    paired, paired_df, _ = _block_parts(noise)
    b_term, p_term = 2 * noise.between.var / blocks, paired / (runs * blocks)
    df = blocks - 1 if blocks >= 3 else _satterthwaite([(b_term, noise.between.df), (p_term, paired_df)])
    return math.expm1(t_quantile(df, 0.5 + confidence / 2) * math.sqrt(b_term + p_term))


def block_lines(noise: Noise, blocks: int, runs: int, confidence: float = CONFIDENCE,
                precision: float | None = None, cap: int = 100) -> list[str]:
    """What back-to-back blocks on ``noise`` are expected to reach (the dry run): the half-width at
    ``blocks`` blocks of ``runs`` pairs, and the blocks a speedup within ``precision`` needs (+-5%
    where none is asked for)."""
    _, _, which = _block_parts(noise)
    wanted = PRECISION if precision is None else precision
    target = math.log1p(wanted)
    need = next((j for j in range(3, cap + 1) if math.log1p(block_half_width(noise, j, runs, confidence)) <= target),
                None)
    reach = (f"{need} blocks of {runs} pairs reach +-{100 * wanted:g}%" if need is not None else
             f"even {cap} blocks of {runs} pairs do not reach +-{100 * wanted:g}%")
    return [f"expected precision: a speedup against no speculation from {blocks} blocks of {runs} pairs: "
            f"+-{100 * block_half_width(noise, blocks, runs, confidence):.1f}% ({100 * confidence:g}% interval; a block "
            f"mean's variance 2 x between-start + {which} / {runs}); {reach}"]


def _asked(need: Design, costs: tuple[float, float] | None, precision: float, max_repeats: int | None,
           starts: int | None) -> list[str]:
    """The design for a precision asked for: its starts, runs and time a setting; the caps on them."""
    wanted = f"+-{100 * precision:g}%"
    if not need.reached:
        return [f"precision: {wanted} is out of reach on this noise (more than {need.starts} server starts of "
                f"{need.runs} runs a setting); ask for a coarser precision"]
    total = need.starts * need.runs
    line = f"precision: {wanted} needs {need.starts} server starts of {need.runs} runs a setting ({total} runs)"
    if costs is not None:
        start_s, run_s = costs
        line += (f", {_duration(need.starts * (start_s + need.runs * run_s))} a setting at {start_s:.0f} s a start "
                 f"and {run_s:.0f} s a run")
    else:
        line += f"; its time is not known without a profile's costs ({CALIBRATE} and pass it as noise: PATH)"
    lines = [line]
    if starts is not None and starts < need.starts:
        times = "once" if starts == 1 else f"{starts} times"
        lines.append(f"the sweep starts each setting's server {times}, fewer than the {need.starts} starts of this "
                     f"design (starts: N sets it)")
    if max_repeats is not None and max_repeats < total:
        lines.append(f"max_repeats ({max_repeats}) caps a point at {max_repeats} runs over all its starts, below the "
                     f"{total} of this design: the sweep stops short of {wanted} (raise max_repeats, or ask for a "
                     f"coarser precision)")
    return lines


def _duration(seconds: float) -> str:
    """``45 s``, ``12.5 min``, ``3.2 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


# -- checks of the keys ---------------------------------------------------------------------------

def _number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def precision_problem(value, where: str = "precision") -> str | None:
    if not _number(value) or not 0 < value < 1:
        return (f"{where}: {value!r} is no relative half-width; give a number between 0 and 1 "
                "(0.05: the ratio within +-5%)")
    return None


def margin_problem(value, where: str = "margin") -> str | None:
    if not _number(value) or not 0 <= value < 1:
        return (f"{where}: {value!r} is no equivalence margin; give a fraction from 0 to below 1 (0.02: within "
                f"+-2%)")
    return None


def check_precision(value) -> None:
    if (problem := precision_problem(value)) is not None:
        raise UserError(problem)


def check_margin(value) -> None:
    if (problem := margin_problem(value)) is not None:
        raise UserError(problem)


# -- noise.json -----------------------------------------------------------------------------------

MATCHED = ("vllm_version", "vllm_build", "device", "target", "tensor_parallel_size")  # must agree to reuse a profile


@dataclass(frozen=True)
class Fingerprint:
    """Where a profile was measured."""

    vllm_version: str
    vllm_build: str  # cpu | cuda <version> | rocm ...
    device: str  # the CPU model, or the GPU model and its count
    device_detail: str  # CPU flags that matter (avx512f, amx), or the GPU driver
    target: str
    tensor_parallel_size: int
    concurrency: int


@dataclass(frozen=True)
class Profile:
    noise: Noise
    start_s: float  # seconds to start a server
    run_s: float  # seconds per counted run
    fingerprint: Fingerprint
    design: str  # sequential | back_to_back
    starts: int
    runs: int
    extra: dict = field(default_factory=dict)  # the A/A check and anything else recorded beside


def _component_json(c: Component | None, confidence: float = CONFIDENCE):
    if c is None:
        return None
    low, high = c.interval(confidence)
    return {"sd": c.sd, "var": c.var, "df": c.df, "sd_interval": [low, high], "confidence": confidence,
            "source": c.source}


def profile_json(p: Profile) -> dict:
    return {"format": FORMAT, "kind": "noise profile", "design": p.design, "starts": p.starts, "runs": p.runs,
            "between": _component_json(p.noise.between), "within": _component_json(p.noise.within),
            "paired": _component_json(p.noise.paired), "n0": p.noise.n0,
            "costs": {"start_s": p.start_s, "run_s": p.run_s}, "fingerprint": asdict(p.fingerprint), **p.extra}


def write_profile(path: Path, p: Profile) -> None:
    from llama4spec.files import write_json

    write_json(path, profile_json(p))


PROFILE_FIX = f"{CALIBRATE} (it writes noise.json)"


def _bad(path, what: str) -> UserError:
    return UserError(f"{path}: {what}; {PROFILE_FIX}")


def read_profile(path: Path, here: Fingerprint | None = None) -> Profile:
    """noise.json read back through its model (``noise_profile.ProfileRecord``: every component,
    cost and count finite and bounded) and checked: UserError (one line naming the field and the
    rule, or the difference, and the fix) for a file cut short, a field out of its bounds or of the
    wrong type, or one measured elsewhere (``here``: the fingerprint of where it is to be used; its
    fields that are empty are not compared)."""
    rec = _profile_record(path)
    source = profile_source(path)

    def one(c) -> Component | None:
        return None if c is None else Component(c.sd ** 2, c.df, source)

    fp = Fingerprint(**rec.fingerprint.model_dump())
    if here is not None:
        for key in MATCHED:
            theirs, ours = getattr(fp, key), getattr(here, key)
            if ours not in (None, "") and theirs != ours:
                raise UserError(f"{path}: measured with {key.replace('_', ' ')} {theirs!r}, this run has {ours!r}; "
                                f"a profile holds only where it was measured: {CALIBRATE}")
    noise = Noise(one(rec.between), one(rec.within), one(rec.paired), n0=rec.n0)
    extra = {} if rec.aa_check is None else {"aa_check": rec.aa_check.model_dump()}
    return Profile(noise, rec.costs.start_s, rec.costs.run_s, fp, rec.design, rec.starts, rec.runs, extra)


# -- simulated sweeps (the checks of this module's coverage) --------------------------------------

def simulate(rng: np.random.Generator, sweeps: int, between_sd: float, within_sd: float, log_effects: Sequence[float],
             starts: int, runs: int) -> np.ndarray:
    """Log throughputs [sweeps, settings, starts, runs] under the model: setting s's true log
    effect, a start offset ~ N(0, between_sd) each start, a run's own ~ N(0, within_sd)."""
    shape = (sweeps, len(log_effects), starts)
    offsets = rng.normal(0.0, between_sd, shape)[..., None]
    return np.asarray(log_effects, float)[None, :, None, None] + offsets + rng.normal(0.0, within_sd, (*shape, runs))


def simulated_intervals(y: np.ndarray, a: int, b: int, confidence: float = CONFIDENCE,
                        noise: Noise | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For simulated sweeps ``y`` (``simulate``; every start of ``runs`` runs): setting a against b,
    each run's start known, the components estimated from the sweep itself unless ``noise`` is given.
    Returns (center, half-width, df) of the log ratio's interval, per sweep."""
    noise = components(y) if noise is None else noise
    starts, runs = y.shape[-2], y.shape[-1]
    center = y[:, a].mean((-1, -2)) - y[:, b].mean((-1, -2))
    var, df = comparison_variance(noise, starts * runs, starts * runs, 1.0 / starts, 1.0 / starts)
    return center, t_quantile(df, 0.5 + confidence / 2) * np.sqrt(var), df


def _profile_record(path: Path):
    """noise.json through its model (``noise_profile.ProfileRecord``): UserError, one line, otherwise."""
    from llama4spec.analysis.noise_profile import ProfileRecord
    from llama4spec.files import Expect, read_json
    from llama4spec.records.base import validated

    data = read_json(Path(path), Expect("noise profile", PROFILE_FIX, 1 << 20))
    if not isinstance(data, dict):
        raise _bad(path, f"holds a JSON {type(data).__name__}, not a noise profile")
    return validated(ProfileRecord, data, str(path), PROFILE_FIX)


def _register() -> None:
    from llama4spec.analysis.noise_profile import ProfileRecord
    from llama4spec.records.registry import Entry, register

    register(Entry("noise.json", ProfileRecord, "llama4spec.noise/1",
                   "written by `llama4spec calibrate`; read by a sweep's `noise:` key, `calibrate --check` and "
                   "`report` (the prior a plan records)", _profile_record))


_register()
