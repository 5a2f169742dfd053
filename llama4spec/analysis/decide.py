"""Measuring until the answer is decided: the error control of sequential sweeps (pure, no I/O).

What is controlled. At one concurrency, while ``allocate`` gives out the runs one at a time and
every point is looked at after every run, the probability of *any* false verdict (a point called
faster, or slower, than no speculation when it is not) or *any* false elimination (a point called
slower than another when it is not) is at most ``1 - confidence``. That is one family-wise error
rate over the concurrency's comparisons, all its looks and the data-dependent allocation together.
It assumes each setting's runs come from one server start and are exchangeable within it, and that
the statistic's own test is valid at each look (Welch-Satterthwaite is an approximation).

The rule, in four parts.

1. *Compare by the difference.* Two settings compare by the difference of their mean per-run
   values, never by whether two intervals overlap: for throughput (``LogRatio``) Welch's t on the
   mean log throughputs, exponentiated into a ratio. Its variance adds ``2 * between``, the
   between-start log-variance that runs against one server start cannot average out, taken from a
   noise estimate (``analysis.noise.Noise``: the sweep's own starts, a profile or the hardware's
   prior, with its df; Satterthwaite degrees of freedom over both terms, a component of infinite df
   counting as exact). No bootstrap. The paired form (``PairedLogRatio``: t on the
   mean log ratio of back-to-back pairs) compares the settings an interleaved design measured in
   turn.
2. *Looks.* A pair is looked at at l = min_repeats .. max_repeats, on the first l runs of each
   side: the same runs whatever order they were given out in, so the allocation cannot bias a
   look. Bonferroni over every reachable look, weighted (alpha spending): the last look keeps
   ``1 - EARLY_LOOKS_ALPHA`` of alpha, the earlier ones share ``EARLY_LOOKS_ALPHA`` equally, and a pair's
   p-value is min over the looks so far of p_l / w_l, valid whenever the measuring stops.
3. *Multiplicity (Holm 1979).* Every ordered pair (p, q) carries the one-sided hypothesis "p is
   not faster than q"; rejecting it declares p faster than q. Holm's step-down runs over all
   P(P-1) of them on the anytime p-values and needs no independence. Those p-values only fall as
   runs arrive and Holm is monotone, so a decision, once taken, stands, and every decision taken
   on the way is one Holm takes on the final p-values: one bound covers the whole measurement.
4. *Elimination* (fixed-confidence successive elimination, Even-Dar, Mannor and Mansour 2006,
   JMLR 7): a point declared slower than another (normally the leader, the highest mean) is
   eliminated and gets no more runs; the baseline keeps getting them while a verdict is open.

Why Bonferroni over looks and not confidence sequences (Howard, Ramdas, McAuliffe and Sekhon
2021): where the server start dominates the noise (as the issue's repeated sweeps suggest), its
effect is fixed once a server is up, so a comparison's information hardly grows with runs. A confidence sequence pays at every time for looking at all
times and has nothing to gain here; a split that keeps nearly all of alpha for the last look costs
a fraction of a point of power against a fixed design of ``max_repeats`` runs (for a one-sided
question no valid rule capped at the same runs can have more: Neyman-Pearson) and still stops a
clear comparison at the first look.

The dominance bound (``speedup_bound``, ``cannot_win``) says which larger lookahead cannot win and
need not be started.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Mapping, Protocol, Sequence

import numpy as np

from llama4spec.analysis.noise import Noise, t_quantile

CONFIDENCE = 0.95
MIN_REPEATS = 2
MAX_REPEATS = 10
REPEATS_CAP = 100  # the largest max_repeats accepted
# Share of alpha spent on the looks before the last. Each 0.01 of it costs about 0.12 points of
# power at the last look (80% power, one comparison; benchmarks/decide_power.py measures 0.1 to
# 0.3 points for 0.02); 0.02 still decides a comparison clear by 3.8 (two points) to 4.4 (five
# points) standard errors at the first look. Equal shares (plain Bonferroni) cost 25 points.
EARLY_LOOKS_ALPHA = 0.02

STATES = ("open", "resolved", "eliminated", "max_repeats")
OPEN, RESOLVED, ELIMINATED, AT_MAX = range(len(STATES))


def _special():
    from scipy import special  # loaded on first use: importing scipy takes ~0.4 s

    return special


# -- the statistic --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Estimate:
    """a against b on the statistic's scale (0: no difference), elementwise over arrays."""

    center: np.ndarray
    se: np.ndarray
    df: np.ndarray

    def t(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = self.center / self.se
        exact = np.select([self.center > 0, self.center < 0, self.center == 0], [np.inf, -np.inf, 0.0], np.nan)
        return np.where(self.se > 0, ratio, exact)


class Statistic(Protocol):
    """How the runs of two settings compare; the error control takes any such statistic.

    Against a fixed threshold (attainment in a capacity search), ``b`` holds the threshold as runs
    of no spread.
    """

    method: str

    def values(self, runs: np.ndarray) -> np.ndarray:
        """Per-run values on the scale where means are compared (NaN: not usable)."""

    def compare(self, a: np.ndarray, b: np.ndarray, share_a=1.0, share_b=1.0) -> Estimate:
        """a's runs against b's, along the last axis (at least 2 each). ``share_a``, ``share_b``:
        how much of one server start's offset each side's mean carries (``start_shares``: 1 for
        runs of one start, 1/m for runs spread evenly over m starts)."""

    def scale(self, x: np.ndarray) -> np.ndarray:
        """A difference or a bound back on the reported scale."""


def _satterthwaite(within, shares, between_var: float, between_df: float):
    """The variance of a difference of means (``within``: each side's variance of its mean and its
    df; plus ``shares`` x the between-start variance on ``between_df``) and Satterthwaite's df, a term
    of inf df exact; a positive between term of 0 df makes the df 0 (nothing known about it)."""
    between = np.asarray(shares, float) * between_var
    total = sum(v for v, _ in within) + between
    dof_terms = sum(v ** 2 / df for v, df in within)
    if 0 < between_df < math.inf:
        dof_terms = dof_terms + between ** 2 / between_df
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(dof_terms > 0, total ** 2 / dof_terms, np.inf)
    if between_df <= 0 and between_var > 0:
        df = np.zeros_like(df)
    return total, df


@dataclass(frozen=True)
class LogRatio:
    """Welch's t on mean log throughput; the ratio is exp of the difference.

    ``noise``: the estimate whose between-start component (a setting's mean log throughput between
    server starts, with its df) each side's mean carries (``analysis.noise``; estimated elsewhere,
    not from these runs). None says runs are independent replicates, true only if each run has its
    own start.
    """

    noise: Noise | None = None
    method: ClassVar[str] = "welch"

    @property
    def between(self) -> tuple[float, float]:
        """The between-start log-variance and its df (0 on inf df without a noise estimate)."""
        return (self.noise.between.var, self.noise.between.df) if self.noise is not None else (0.0, math.inf)

    def values(self, runs: np.ndarray) -> np.ndarray:
        runs = np.asarray(runs, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(runs > 0, np.log(runs), np.nan)

    def _estimate(self, center, within: list[tuple[np.ndarray, int]], shares=2.0) -> Estimate:
        """Satterthwaite: ``within`` holds (variance of a mean, its degrees of freedom); ``shares``
        the two sides' start shares summed (2: each side one server start)."""
        total, df = _satterthwaite(within, shares, *self.between)
        return Estimate(center, np.sqrt(total), df)

    def combined(self, center: float, within: list[tuple[float, float]], shares: float = 2.0) -> Estimate:
        """A weighted difference of means (an interpolated frontier's): ``within`` each mean's
        weighted variance and its df, ``shares`` the start shares of both sides summed."""
        return self._estimate(np.asarray(center, float), [(np.asarray(v, float), d) for v, d in within], shares)

    def compare(self, a: np.ndarray, b: np.ndarray, share_a=1.0, share_b=1.0) -> Estimate:
        na, nb = a.shape[-1], b.shape[-1]
        return self._estimate(a.mean(-1) - b.mean(-1), [(a.var(-1, ddof=1) / na, na - 1),
                                                         (b.var(-1, ddof=1) / nb, nb - 1)],
                              np.asarray(share_a, float) + np.asarray(share_b, float))

    def scale(self, x: np.ndarray) -> np.ndarray:
        return np.exp(x)


@dataclass(frozen=True)
class PairedLogRatio(LogRatio):
    """The paired form (an interleaved design, ``design: interleaved``): run i of ``a`` was
    measured back to back with run i of ``b``, so drift common to both cancels in their log ratio.
    Student's t on the mean of the n = min(n_a, n_b) per-pair log ratios, variance ``var(d) / n``
    on n - 1 degrees of freedom, plus the between-start term as in ``LogRatio``: interleaving
    cancels what changes while both servers run, not the offset each server start carries."""

    method: ClassVar[str] = "paired"

    def compare(self, a: np.ndarray, b: np.ndarray, share_a=1.0, share_b=1.0) -> Estimate:
        n = min(a.shape[-1], b.shape[-1])
        d = a[..., :n] - b[..., :n]
        return self._estimate(d.mean(-1), [(d.var(-1, ddof=1) / n, n - 1)],
                              np.asarray(share_a, float) + np.asarray(share_b, float))


@dataclass(frozen=True)
class BlockLogRatio(LogRatio):
    """Back-to-back blocks (``design: interleaved`` with ``starts: J``): each block's servers started
    together, its pairs' mean log ratio the unit (``analysis.noise.block_estimate``): t on J - 1 df
    from the blocks' own spread with 3 or more blocks, from ``noise``'s between-start and paired
    components with 2."""

    method: ClassVar[str] = "blocks"

    def blocks(self, ratios: Sequence[Sequence[float]]) -> tuple[Estimate, str]:
        """The estimate from each block's per-pair ratios, and what it rests on."""
        from llama4spec.analysis.noise import block_estimate

        center, se, df, text = block_estimate(ratios, self.noise)
        return Estimate(np.asarray(center), np.asarray(se), np.asarray(df)), text


def paired_ratio(numerator: Sequence[float], denominator: Sequence[float], confidence: float = CONFIDENCE,
                 noise: Noise | None = None) -> RatioInterval:
    """The t interval of the mean log ratio of back-to-back pairs (run i of each side), as a ratio
    interval, the between-start term from ``noise``."""
    return _ratio(PairedLogRatio(noise), numerator, denominator, confidence)


@dataclass(frozen=True)
class RatioInterval:
    ratio: float  # the ratio of geometric means (numerator over denominator)
    low: float
    high: float
    confidence: float  # two-sided
    df: float
    method: str  # "welch", or "paired" (back-to-back pairs)


def _interval(statistic: Statistic, est: Estimate, confidence: float) -> RatioInterval:
    q = float(t_quantile(float(est.df), 0.5 + confidence / 2))
    center, half = float(est.center), q * float(est.se)
    if not math.isfinite(half):  # nothing known of the between-start term: no bound
        return RatioInterval(float(statistic.scale(center)), 0.0, math.inf, confidence, float(est.df),
                             statistic.method)
    return RatioInterval(float(statistic.scale(center)), float(statistic.scale(center - half)),
                         float(statistic.scale(center + half)), confidence, float(est.df), statistic.method)


def _ratio(statistic: Statistic, numerator, denominator, confidence: float, shares=(1.0, 1.0)) -> RatioInterval:
    a, b = statistic.values(np.asarray(numerator, float)), statistic.values(np.asarray(denominator, float))
    if a.size < 2 or b.size < 2 or np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("a ratio interval needs at least 2 positive, finite runs a side")
    return _interval(statistic, statistic.compare(a, b, *shares), confidence)


def welch_ratio(numerator: Sequence[float], denominator: Sequence[float], confidence: float = CONFIDENCE,
                noise: Noise | None = None, shares: tuple[float, float] = (1.0, 1.0)) -> RatioInterval:
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
    total, df = _satterthwaite([(var_a / n, n - 1), (var_b / n, n - 1)], shares, *LogRatio(noise).between)
    ok = abs(center) > t_quantile(df, 1.0 - level) * np.sqrt(total)
    return int(n[np.argmax(ok)]) if ok.any() else None


# -- multiplicity and looks -----------------------------------------------------------------------

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
    """Every look at every pair of points, computed once: ``decide`` reads only looks reached.

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
    stdtr = _special().stdtr
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
    exactly as ``decide`` reads them: what a report of such a sweep compares by."""
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
    weights, stdtr = look_weights(min_blocks, max_blocks), _special().stdtr
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


def interval_at(statistic: Statistic, est: Estimate, confidence: float) -> RatioInterval:
    """An estimate's two-sided interval on the reported scale."""
    return _interval(statistic, est, confidence)


# -- decisions and allocation ---------------------------------------------------------------------

@dataclass(frozen=True)
class Decisions:
    above: np.ndarray  # [sweeps, points, points]: above[s, p, q] = p declared faster than q
    state: np.ndarray  # [sweeps, points]: index into STATES
    leader: np.ndarray  # [sweeps]: the highest mean among points not eliminated
    next: np.ndarray  # [sweeps]: the point that gets the next run, -1 when every point stopped
    level: np.ndarray  # [sweeps]: one-sided alpha of Holm's next step (alpha / hypotheses left)
    # [sweeps, points]: an open point whose next run moves a look of an open question (or is below
    # min_repeats); an open point without one waits on the other side's runs
    useful: np.ndarray | None = None


def decide(table: Looks, counts: np.ndarray, baseline: int, confidence: float = CONFIDENCE) -> Decisions:
    """Verdicts, eliminations, states and the next run, for ``counts`` [sweeps, points] runs so far.

    Questions open at a concurrency: each candidate's verdict against the baseline (until it is
    decided or the candidate eliminated) and each remaining point's place against the leader. A
    point stops *eliminated* (declared slower than another, and no open verdict needs it),
    *resolved* (no open question left: the leader once the others are out and its verdict is
    decided), or at *max_repeats*; otherwise (and always below min_repeats) it is *open*.

    The next run: first, in order, any point below min_repeats (fewest runs first). Then, for each
    open question whose next look needs a run of point p, the chance that look settles it,
    pi = Phi(|t| - c): Phi the normal distribution function, t the question's statistic now and c
    the normal quantile of the next look's level (Holm's next step times the look's weight), so pi
    is the chance the question clears its next bound were its statistic to move by a standard
    normal step, divided by the runs that look still needs (1 or 2). The open point with the
    highest pi gets the run; ties go to the fewest runs, then to the earlier point.
    """
    counts = np.asarray(counts)
    above, level = _declared(table, counts, 1.0 - confidence)
    needed, eliminated, leader = _questions(table, counts, above, baseline)
    state = np.where(needed.any(-1), np.where(counts < table.max_repeats, OPEN, AT_MAX),
                     np.where(eliminated, ELIMINATED, RESOLVED))
    state = np.where(counts < table.min_repeats, OPEN, state)  # every point gets min_repeats runs
    nxt, useful = _next_run(table, counts, needed, state, level)
    return Decisions(above, state, leader, nxt, level, useful)


def _declared(table: Looks, counts: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm over every ordered pair at the looks reached: above[s, p, q], and Holm's next level."""
    first, second, n_pairs = table.first, table.second, len(table.first)
    look = np.minimum(counts[:, first], counts[:, second])
    at = np.clip(look - table.min_repeats, 0, len(table.weights) - 1)[..., None]
    p_up, p_down = (np.where(look >= table.min_repeats, np.take_along_axis(a, at, -1)[..., 0], 1.0)
                    for a in (table.anytime_up, table.anytime_down))
    rejected = holm(np.concatenate([p_up, p_down], -1), alpha)
    above = np.zeros((*counts.shape, counts.shape[1]), dtype=bool)
    above[:, first, second], above[:, second, first] = rejected[:, :n_pairs], rejected[:, n_pairs:]
    return above, alpha / np.maximum(2 * n_pairs - rejected.sum(-1), 1)


def _questions(table: Looks, counts: np.ndarray, above: np.ndarray, baseline: int):
    """The open questions as a symmetric [sweeps, points, points] mask, the eliminated points and
    the leader (the highest mean among points not eliminated)."""
    sweeps, n_points = counts.shape
    rows, pts = np.arange(sweeps)[:, None], np.arange(n_points)[None, :]
    eliminated = above.any(axis=1)
    with np.errstate(invalid="ignore"):
        mean = np.take_along_axis(table.means, np.clip(counts - 1, 0, table.max_repeats - 1)[..., None], -1)[..., 0]
    mean = np.where(counts > 0, np.nan_to_num(mean, nan=-np.inf), -np.inf)
    alive = np.where(eliminated.all(1, keepdims=True), True, ~eliminated)
    leader = np.argmax(np.where(alive, mean, -np.inf), axis=1)

    needed = np.zeros_like(above)
    verdict_open = (pts != baseline) & ~eliminated & ~above[:, :, baseline] & ~above[:, baseline, :]
    needed[:, :, baseline] |= verdict_open
    needed[:, baseline, :] |= verdict_open
    place_open = ~eliminated & (pts != leader[:, None])
    needed[rows, pts, leader[:, None]] |= place_open
    needed[rows, leader[:, None], pts] |= place_open
    return needed, eliminated, leader


def _next_run(table: Looks, counts: np.ndarray, needed: np.ndarray, state: np.ndarray, level: np.ndarray):
    """The point that gets the next run (the heuristic of ``decide``), -1 when none is open."""
    special, w, m = _special(), table.weights, table.min_repeats
    sweeps, n_points = counts.shape
    first, second, n_pairs = table.first, table.second, len(table.first)
    pair_look = np.minimum(counts[:, :, None], counts[:, None, :])
    wants = counts[:, :, None] == pair_look  # p's run is needed for the pair's next look
    pair_of = np.full((n_points, n_points), n_pairs)  # the diagonal points at a padding column
    pair_of[first, second] = pair_of[second, first] = np.arange(n_pairs)
    at = np.clip(np.minimum(counts[:, first], counts[:, second]) - m, 0, len(w) - 1)[..., None]
    t_now = np.abs(np.take_along_axis(table.t, at, -1)[..., 0])
    t_now = np.concatenate([t_now, np.zeros((sweeps, 1))], 1)[:, pair_of]  # [S, P, P]
    c_next = special.ndtri(1.0 - level[:, None, None] * w[np.clip(pair_look + 1 - m, 0, len(w) - 1)])
    pi = special.ndtr(t_now - c_next) / (wants.astype(int) + wants.transpose(0, 2, 1))
    settles = needed & (pair_look < table.max_repeats) & wants & (pair_look >= m)
    score = np.where(settles, pi, -np.inf).max(-1)
    candidate = (state == OPEN) & (score > -np.inf)
    score = np.where(candidate, score, -np.inf)
    pick = candidate & (score == score.max(1, keepdims=True))
    pick &= counts == np.where(pick, counts, np.iinfo(int).max).min(1, keepdims=True)
    nxt = np.where(pick.any(1), pick.argmax(1), -1)

    short = counts < m
    fewest = short & (counts == np.where(short, counts, np.iinfo(int).max).min(1, keepdims=True))
    return np.where(short.any(1), fewest.argmax(1), nxt), candidate | (short & (state == OPEN))


@dataclass(frozen=True)
class Replay:
    counts: np.ndarray  # [sweeps, points]: runs each point got
    decisions: Decisions  # when every point had stopped
    ever_above: np.ndarray  # every declaration made on the way (equal to decisions.above: they stand)


def _check(min_repeats: int, max_repeats: int, confidence: float) -> None:
    problems = []
    if min_repeats < 2:
        problems.append(f"min_repeats must be at least 2, not {min_repeats}")
    if not min_repeats <= max_repeats <= REPEATS_CAP:
        problems.append(f"max_repeats must be between min_repeats ({min_repeats}) and {REPEATS_CAP}, not {max_repeats}")
    if not 0.5 < confidence < 1:
        problems.append(f"confidence must lie in (0.5, 1), not {confidence}")
    if problems:
        raise ValueError("; ".join(problems))


def replay(runs: np.ndarray, baseline: int, min_repeats: int = MIN_REPEATS, max_repeats: int = MAX_REPEATS,
           confidence: float = CONFIDENCE, statistic: Statistic = LogRatio()) -> Replay:
    """The allocation run to the end on runs known in advance, for many sweeps at once: the i-th
    run a point gets is ``runs[s, p, i]`` (throughputs [sweeps, points, >= max_repeats]). What a
    sweep does when it asks ``allocate`` for every run; also how a resumed sweep recomputes."""
    _check(min_repeats, max_repeats, confidence)
    table = looks(statistic.values(runs), statistic, min_repeats, max_repeats)
    counts = np.zeros(np.shape(runs)[:2], dtype=int)
    ever = np.zeros((*counts.shape, counts.shape[1]), dtype=bool)
    while True:
        d = decide(table, counts, baseline, confidence)
        ever |= d.above
        go = np.flatnonzero(d.next >= 0)
        if go.size == 0:
            return Replay(counts, d, ever)
        counts[go, d.next[go]] += 1


@dataclass(frozen=True)
class PointState:
    state: str  # one of STATES
    runs: int
    verdict: str | None  # "faster", "slower" or "undecided" against the baseline; None for it
    # Against the baseline at the pair's current look, at the level a decision there needs now
    # (Holm's next step times the look's weight); None for the baseline and before min_repeats.
    speedup: RatioInterval | None
    below: str | None  # the point this one is declared slower than (the leader when it is one)
    share: float = 1.0  # of one server start's offset its mean carries (``start_shares``)
    starts: int = 1  # the server starts its runs came from
    useful: bool = True  # open: its next run moves a look of an open question (else it waits on another point)


@dataclass(frozen=True)
class Allocation:
    points: dict[str, PointState]
    leader: str | None
    next: str | None  # the point that gets the next run; None when every point has stopped
    confidence: float


def allocate(runs: Mapping[str, Sequence[float]], baseline: str, min_repeats: int = MIN_REPEATS,
             max_repeats: int = MAX_REPEATS, confidence: float = CONFIDENCE,
             statistic: Statistic = LogRatio(), starts: Mapping[str, Sequence[int]] | None = None) -> Allocation:
    """Each point's state and verdict, and which point gets the next run, at one concurrency.

    ``runs``: point id -> its throughputs so far (in the order measured); ``starts``: point id ->
    the server start of each of those runs (absent: all from one start of that setting);
    ``baseline``: the id of no speculation. The rule and what it controls: the module docstring;
    the choice of the next run: ``decide``.
    """
    _check(min_repeats, max_repeats, confidence)
    if baseline not in runs:
        raise ValueError(f"baseline {baseline!r} is not among the points {sorted(runs)}")
    ids = list(runs)
    throughput = np.full((1, len(ids), max_repeats), np.nan)
    for i, pid in enumerate(ids):
        xs = np.asarray(list(runs[pid]), dtype=float)
        if xs.size > max_repeats:
            raise ValueError(f"{pid}: {xs.size} runs, more than max_repeats ({max_repeats})")
        if not np.all(np.isfinite(xs) & (xs > 0)):
            raise ValueError(f"{pid}: throughputs must be positive and finite, not {xs.tolist()}")
        throughput[0, i, :xs.size] = xs
    counts = np.array([[len(runs[pid]) for pid in ids]])
    start_ids = np.full(throughput.shape, -1)
    for i, pid in enumerate(ids):
        given = list((starts or {}).get(pid) or [0] * int(counts[0, i]))
        if len(given) != counts[0, i]:
            raise ValueError(f"{pid}: {len(given)} server starts for {counts[0, i]} runs")
        start_ids[0, i, :len(given)] = given
    shares = start_shares(start_ids)
    b = ids.index(baseline)
    table = looks(statistic.values(throughput), statistic, min_repeats, max_repeats, shares=shares)
    d = decide(table, counts, b, confidence)
    above, leader = d.above[0], int(d.leader[0])

    points = {}
    for i, pid in enumerate(ids):
        verdict = speedup = None
        if i != b:
            verdict = "faster" if above[i, b] else "slower" if above[b, i] else "undecided"
            look = min(counts[0, i], counts[0, b])
            if look >= min_repeats:
                u = np.flatnonzero((table.first == min(i, b)) & (table.second == max(i, b)))[0]
                k, sign = look - min_repeats, 1 if i < b else -1
                est = Estimate(sign * table.estimate.center[0, u, k], table.estimate.se[0, u, k],
                               table.estimate.df[0, u, k])
                speedup = _interval(statistic, est, 1 - 2 * float(d.level[0]) * float(table.weights[k]))
        beaters = [q for q in range(len(ids)) if above[q, i]]
        below = None
        if beaters:
            below = ids[leader] if leader in beaters else ids[max(beaters, key=lambda q: table.means[0, q, counts[0, q] - 1])]
        points[pid] = PointState(STATES[d.state[0, i]], int(counts[0, i]), verdict, speedup, below,
                                 float(shares[0, i, counts[0, i] - 1]) if counts[0, i] else 1.0,
                                 len(set(start_ids[0, i, :counts[0, i]].tolist())), bool(d.useful[0, i]))
    nxt = int(d.next[0])
    return Allocation(points, ids[leader], ids[nxt] if nxt >= 0 else None, confidence)


# -- lookaheads that cannot win -------------------------------------------------------------------

def speedup_bound(k: int, k_next: int, s_high: float, a_high: float, e_low: float) -> float:
    """The most a larger lookahead ``k_next`` can reach, from lookahead ``k`` measured:
    ``S(k') <= S_hi(k) * (1 + (k' - k) * a_hi(k-1) / E_lo(k))``.

    vLLM's per-position acceptance rate is unconditional (a position counts only when every
    earlier one was accepted), so it cannot rise with position: E(k') <= E(k) + (k' - k) a_(k-1).
    Drafting more tokens never makes a step cheaper, so S(k') / S(k) <= E(k') / E(k). The inputs
    are one-sided confidence bounds: ``s_high`` above k's speedup, ``a_high`` above the acceptance
    rate of k's last drafted position (0-based k-1), ``e_low`` below k's acceptance length (tokens
    per step, at least 1). Valid where draft tokens = k x drafts, not under a schedule.
    """
    if not 1 <= k < k_next:
        raise ValueError(f"need 1 <= k < k_next, not k={k}, k_next={k_next}")
    if not (s_high > 0 and 0 <= a_high <= 1 and e_low >= 1):
        raise ValueError(f"need s_high > 0, 0 <= a_high <= 1 and e_low >= 1, not {s_high}, {a_high}, {e_low}")
    return s_high * (1 + (k_next - k) * a_high / e_low)


def cannot_win(bounds: Mapping[int, float], leader_lows: Mapping[int, float]) -> bool:
    """True when a lookahead's bound (concurrency -> ``speedup_bound``) lies below the leader's
    lower bound at every measured concurrency (the keys of ``leader_lows``). A concurrency without
    a bound, or no measured concurrency at all, keeps the lookahead."""
    return bool(leader_lows) and all(c in bounds and bounds[c] < low for c, low in leader_lows.items())
