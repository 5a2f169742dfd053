"""Repeated measurements turned into intervals, and settings compared by their difference.

Every benchmark point is measured several times. A point's figure is the median of its repeats,
with a 95% interval: Student-t of the mean for fewer than ``BOOTSTRAP_FROM`` repeats (few samples
cannot carry a bootstrap), a percentile bootstrap of the median from there on (seeded, so the
same samples always give the same interval). These intervals describe one setting; they never
decide between two.

Two settings at one concurrency compare by the difference of their mean log throughputs
(``compare``: Welch's t with the between-start term, Holm over the concurrency's pairs: the rule
of ``decide`` at a single look), each comparison saying faster, slower or undecided. Then the
draft-cost model fitted with an interval and a choice between one and two parameters
(``fit_cost``).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from llama4spec.analysis.noise import Noise
from llama4spec.analysis.decide import (REPEATS_CAP, BlockLogRatio, LogRatio, PairedLogRatio, RatioInterval, block_look,
                                     holm,
                                     interval_at, look_weights, pair_look, runs_to_settle, start_floor,
                                     start_shares)

CONFIDENCE = 0.95
EQUIVALENT = "equivalent"
BOOTSTRAP_FROM = 10  # Student-t below this many samples, bootstrap from it on
_RESAMPLES = 9999
_RSS_FLOOR = 1e-12  # an exact fit has RSS 0; ln(0) would make the AIC -inf


@dataclass(frozen=True)
class Interval:
    median: float | None  # the median of the samples (None without samples)
    low: float | None  # None when it cannot be computed (fewer than 2 samples)
    high: float | None
    n: int
    method: str  # "t" (Student-t), "bootstrap", "single sample", "none"
    confidence: float = CONFIDENCE

    @property
    def bounded(self) -> bool:
        return self.low is not None and self.high is not None

    def text(self, fmt: str = ".1f") -> str:
        """``812.3 [790.1, 830.2]``, ``812.3 (1 sample)``, or ``no samples``."""
        if self.median is None:
            return "no samples"
        if not self.bounded:
            return f"{self.median:{fmt}} ({self.n} sample{'' if self.n == 1 else 's'})"
        return f"{self.median:{fmt}} [{self.low:{fmt}}, {self.high:{fmt}}]"


def _finite(samples: Sequence[float | None]) -> list[float]:
    return [float(x) for x in samples if x is not None and math.isfinite(x)]


# scipy.stats takes over half a second to import: loaded on first use, so that importing the
# sweep package (and the CLI above it) stays instant.

def _t(confidence: float, df: int) -> float:
    """The two-sided Student-t quantile for ``confidence`` with ``df`` degrees of freedom."""
    from scipy import stats

    return float(stats.t.ppf(0.5 + confidence / 2, df))


def _bootstrap(data: tuple, statistic, confidence: float, seed: int) -> tuple[float, float]:
    from scipy import stats

    # scipy >= 1.15 takes rng=; older releases only random_state=.
    rng_key = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"
    res = stats.bootstrap(data, statistic, confidence_level=confidence, method="percentile",
                          n_resamples=_RESAMPLES, vectorized=True, paired=False,
                          **{rng_key: np.random.default_rng(seed)})
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _median_of(x, axis=-1):
    return np.median(x, axis=axis)


def interval(samples: Sequence[float], confidence: float = CONFIDENCE, seed: int = 0) -> Interval:
    """Median and interval of repeated measurements (non-finite samples are dropped).

    2..BOOTSTRAP_FROM-1 samples: mean +- t_{n-1} s / sqrt(n) (the interval of the mean; the
    reported centre stays the median), its lower end clipped at 0 when no sample is negative.
    From BOOTSTRAP_FROM on: percentile bootstrap of the median.
    """
    xs = _finite(samples)
    n = len(xs)
    if n == 0:
        return Interval(None, None, None, 0, "none", confidence)
    med = float(np.median(xs))
    if n == 1:
        return Interval(med, None, None, 1, "single sample", confidence)
    method = "t" if n < BOOTSTRAP_FROM else "bootstrap"
    if min(xs) == max(xs):
        return Interval(med, med, med, n, method, confidence)
    if method == "t":
        mean = float(np.mean(xs))
        half = _t(confidence, n - 1) * float(np.std(xs, ddof=1)) / math.sqrt(n)
        low = mean - half
        if min(xs) >= 0 and low < 0:
            low = 0.0  # a quantity that cannot be negative (throughput, latency, a ratio) is not
        return Interval(med, low, mean + half, n, method, confidence)
    low, high = _bootstrap((np.asarray(xs),), _median_of, confidence, seed)
    return Interval(med, low, high, n, method, confidence)


@dataclass(frozen=True)
class Comparison:
    """``first`` against ``second`` (point ids), two settings at one concurrency.

    ``verdict`` says whether ``first`` is declared faster or slower than ``second`` by Holm over the
    concurrency's family (``compare``). ``interval`` is Welch's ratio interval at ``level`` (one-sided
    alpha on each side): the level of the Holm step that declared it, or of Holm's next step when it
    is undecided, so the interval excludes 1 exactly when the verdict is decided. Without 2 runs a
    side there is no interval and ``ratio`` is the ratio of medians.
    """

    first: str
    second: str
    ratio: float | None  # geometric means (Welch) or medians (single samples)
    interval: RatioInterval | None
    verdict: str  # "faster", "slower", "equivalent" (within +-margin) or "undecided"
    level: float | None  # one-sided alpha of the interval (None without one)
    hypotheses: int  # one-sided hypotheses in the concurrency's Holm family
    runs_to_settle: int | None = None  # undecided: runs a side that would decide it as measured now
    needs_start: bool = False  # undecided: only another server start can settle it
    noise: Noise | None = None  # the estimate its between-start term came from (None: none)
    margin: float | None = None  # equivalence: "equivalent" when its interval lies within +-margin
    basis: str | None = None  # back-to-back blocks: what its interval rests on ("4 blocks' own spread (3 df)")

    @property
    def decided(self) -> bool:
        return self.verdict != "undecided"

    @property
    def method(self) -> str:
        return self.interval.method if self.interval is not None else "single samples"

    def mirrored(self) -> Comparison:
        """``second`` against ``first``."""
        flip = {"faster": "slower", "slower": "faster"}.get(self.verdict, self.verdict)
        iv = self.interval
        if iv is not None:
            # a look with no estimate yet has the interval [0, inf]
            inv = [1 / x if x > 0 else math.inf for x in (iv.ratio, iv.high, iv.low)]
            iv = RatioInterval(*inv, iv.confidence, iv.df, iv.method)
        return Comparison(self.second, self.first, None if self.ratio is None else 1 / self.ratio, iv, flip,
                          self.level, self.hypotheses, self.runs_to_settle, self.needs_start, self.noise,
                          self.margin, self.basis)

    def text(self) -> str:
        """``2.43x [1.20, 4.91] (98.3%)``, or the ratio alone without an interval."""
        if self.ratio is None:
            return "-"
        if self.interval is None:
            return f"{self.ratio:.2f}x"
        iv = self.interval
        on = f" on {self.basis}" if self.basis else ""
        return f"{iv.ratio:.2f}x [{iv.low:.2f}, {iv.high:.2f}] ({_percent(iv.confidence)}){on}"

    def settle(self, short: bool = False) -> str:
        """What would settle it when undecided ("" when decided). The runs a side: the smallest n
        at which Welch's test at Holm's next level would decide the difference, were each side's
        spread and the difference to stay as measured (``decide.runs_to_settle``)."""
        if self.decided:
            return ""
        if self.interval is None:
            return "at least 2 runs a side" if short else "needs at least 2 runs a side"
        if self.basis:
            return "more blocks" if short else ("needs more back-to-back blocks (starts: J sets them; max_repeats "
                                                "under repeats: auto)")
        if self.needs_start:
            return "another server start" if short else (
                "needs another server start (the between-start term alone keeps its interval across 1)")
        if self.runs_to_settle is None:
            return f"more than {REPEATS_CAP} runs a side"
        if short:
            return f"about {self.runs_to_settle} runs a side"
        return f"about {self.runs_to_settle} runs a side would settle it if the spread and the difference stay as measured"

    def sentence(self) -> str:
        """``faster``, ``slower``, ``equivalent within +-2%``, or ``undecided: <what would settle it>``."""
        if self.verdict == EQUIVALENT:
            return f"{EQUIVALENT} within +-{100 * (self.margin or 0):g}%"
        return self.verdict if self.decided else f"undecided: {self.settle()}"


def _percent(confidence: float) -> str:
    """``98.33%``; as many more decimals as keep a level below 100% from reading 100%."""
    for digits in range(2, 8):
        text = f"{100 * confidence:.{digits}f}"
        if float(text) < 100 or confidence >= 1:
            break
    return f"{text.rstrip('0').rstrip('.')}%"


def _usable(samples: Sequence[float | None]) -> list[float]:
    return [x for x in _finite(samples) if x > 0]


def compare(settings: Mapping[str, Sequence[float]], confidence: float = CONFIDENCE,
            noise: Noise | None = None, starts: Mapping[str, Sequence[int]] | None = None,
            sequential: tuple[int, int] | None = None,
            back_to_back: Mapping[tuple[str, str], tuple[Sequence[float], Sequence[float]]] | None = None,
            margin: float | None = None,
            blocks: Mapping[tuple[str, str], Sequence[Sequence[float]]] | None = None,
            block_rule: tuple[int, int] | None = None) -> dict[tuple[str, str], Comparison]:
    """Every ordered pair of ``settings`` (point id -> output throughputs of its runs), the settings
    measured at one concurrency, each from a server start of its own, or from several (``starts``:
    point id -> each run's server start, aligned with its runs; a revisited sweep's points), whose
    between-start term shrinks with them (``decide.start_shares``).

    The rule (``decide`` at a single look): each ordered pair (p, q) carries the one-sided
    hypothesis "p is not faster than q", tested by Welch's t on the difference of mean log
    throughputs with the between-start term ``2 between`` in its variance, ``noise``'s between-start
    component on its df (``decide.LogRatio``; None: no such term, true only if every run has a server
    start of its own);
    Holm's step-down over all of them at alpha = 1 - confidence bounds the probability of any false
    verdict at the concurrency by alpha (family-wise, no independence needed). A pair with fewer
    than 2 usable runs on a side is not tested and stays undecided. No bootstrap.

    An undecided pair gets the runs a side that would decide it at Holm's next level if the spread
    and the difference stayed as measured (``decide.runs_to_settle``), or "another server start"
    when the between-start term alone keeps the interval across 1.

    ``sequential`` (min_repeats, max_repeats): the points were measured until decided, so the runs
    each got depend on what was seen. Their p-values are then the anytime p-values of
    ``decide`` (each pair at its look min(n_a, n_b) over the first runs a side, Bonferroni-weighted
    over every reachable look), the only ones valid for such data; Holm runs on those, and an
    interval is the look's, at Holm's level times the look's weight.

    ``back_to_back`` (a, b) -> (a's runs, b's runs measured back to back with them, aligned): an
    interleaved design's pairs. Such a pair is tested by the paired t on the mean log ratio
    (``decide.PairedLogRatio``) instead of Welch's, in the same Holm family (fixed designs only:
    with ``sequential`` they are ignored).

    ``blocks`` (a, b) -> each back-to-back block's per-pair ratios a over b: a pair with 2 or more
    blocks is tested on its block means (``decide.BlockLogRatio``: t on J - 1 df from their own
    spread with 3 or more, from ``noise``'s components with 2) in the same Holm family, and says
    what it rests on (``basis``). ``block_rule`` (min_blocks, max_blocks): blocks added until
    decided, so their p-values are ``decide.block_look``'s anytime p-values, as ``sequential``'s.

    ``margin``: a pair neither faster nor slower is "equivalent" when its interval (at the level of
    Holm's next step, as above) lies within [1 / (1 + margin), 1 + margin]: both one-sided tests
    against the margin reject at that level (two one-sided tests, Schuirmann 1987), so the family's
    error bound covers these verdicts too.
    """
    alpha = 1.0 - confidence
    statistic, paired, blocked = LogRatio(noise), PairedLogRatio(noise), BlockLogRatio(noise)
    values = {pid: _usable(xs) for pid, xs in settings.items()}
    logs = {pid: statistic.values(np.asarray(xs)) for pid, xs in values.items() if len(xs) >= 2}
    ids = list(settings)
    pairs = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]]
    tested = [(a, b) for a, b in pairs if a in logs and b in logs]
    seq = {pid: _shares(values[pid], (starts or {}).get(pid)) for pid in logs}
    share = {pid: 1.0 if shares is None else float(shares[-1]) for pid, shares in seq.items()}
    if sequential is not None:
        diffs, basis = {}, {}
        look = {(a, b): pair_look(logs[a], logs[b], statistic, *sequential, seq[a], seq[b]) for a, b in tested}
        est = {pair: lk.estimate for pair, lk in look.items()}
        weight = {pair: lk.weight for pair, lk in look.items()}
        p = np.array([look[pair].up for pair in tested] + [look[pair].down for pair in tested])
    else:
        est, diffs, basis, weight, p = _fixed(tested, logs, share, (statistic, paired, blocked), back_to_back,
                                              blocks, block_rule, noise)
    family = _Family.of(tested, est, weight, p, alpha)
    out: dict[tuple[str, str], Comparison] = {}
    for a, b in pairs:
        if (a, b) not in est:
            med_a, med_b = (float(np.median(values[x])) if values[x] else None for x in (a, b))
            ratio = med_a / med_b if med_a is not None and med_b else None
            c = Comparison(a, b, ratio, None, "undecided", None, family.m, noise=noise, margin=margin)
        else:
            c = family.judge((a, b), logs, diffs, share, sequential, noise, margin,
                             blocked if (a, b) in basis else paired if (a, b) in diffs else statistic,
                             basis.get((a, b)))
        out[(a, b)], out[(b, a)] = c, c.mirrored()
    return out


def _fixed(tested, logs, share, statistics, back_to_back, blocks, block_rule, noise):
    """A fixed design's estimates, per-pair log ratios (paired pairs), bases (block pairs), look
    weights and one-sided p-values (with ``block_rule``: the block looks' anytime p-values)."""
    statistic, paired, blocked = statistics
    est, diffs = _fixed_estimates(tested, logs, share, statistic, paired, back_to_back)
    basis = _block_estimates(est, diffs, blocked, blocks)
    weight = dict.fromkeys(tested, 1.0)
    p = _one_sided(est, tested)
    if block_rule is not None:
        _block_looks(tested, est, diffs, weight, p, basis, blocks or {}, block_rule, noise)
    return est, diffs, basis, weight, p


def _fixed_estimates(tested, logs, share, statistic, paired, back_to_back):
    """A fixed design's estimate for each tested pair (Welch's on the log throughputs, or the paired
    t where the pair was measured back to back), and the paired pairs' per-pair log ratios."""
    diffs: dict[tuple[str, str], np.ndarray] = {}
    est = {(a, b): statistic.compare(logs[a], logs[b], share[a], share[b]) for a, b in tested}
    for (a, b), (xs, ys) in (back_to_back or {}).items():
        # both arms of a pair come from the same server starts: the candidate's (a merge numbers
        # each run directory's runs as starts of their own)
        both = share.get(a, 1.0)
        if (a, b) not in est:  # given the other way round
            (a, b), (xs, ys) = (b, a), (ys, xs)
        pa, pb = (statistic.values(np.asarray(_usable(v))) for v in (xs, ys))
        n = min(pa.size, pb.size)
        if (a, b) in est and n >= 2:
            est[(a, b)], diffs[(a, b)] = paired.compare(pa, pb, both, both), pa[:n] - pb[:n]
    return est, diffs


def _block_estimates(est, diffs, blocked: BlockLogRatio, blocks) -> dict[tuple[str, str], str]:
    """The tested pairs measured in 2 or more back-to-back blocks: their estimates replaced by the
    block means' (``BlockLogRatio``); returns what each rests on. A pair of 2 blocks without a
    paired component in the noise keeps its paired estimate."""
    basis = {}
    for (a, b), ratios in (blocks or {}).items():
        if (a, b) not in est:  # given the other way round
            (a, b), ratios = (b, a), [[1 / r for r in block] for block in ratios]
        usable = [[r for r in block if r is not None and 0 < r < math.inf] for block in ratios]
        usable = [block for block in usable if block]
        if (a, b) not in est or len(usable) < 2:
            continue
        try:
            est[(a, b)], basis[(a, b)] = blocked.blocks(usable)
        except ValueError:
            continue
        diffs.pop((a, b), None)
    return basis


def _block_looks(tested, est, diffs, weight, p: np.ndarray, basis, blocks, rule: tuple[int, int], noise) -> None:
    """Blocks added until decided: each tested pair of a candidate and no speculation, or of two
    candidates, with ``rule[0]`` blocks or more a side, at its look (``decide.block_look``): its
    estimate, weight, anytime p-values (in ``p``: up, then down) and basis replaced in place."""
    lo, hi = rule
    base = {b for _, b in blocks}
    mine = {a: [blk for blk in ratios if blk] for (a, _), ratios in blocks.items()}
    for u, (a, b) in enumerate(tested):
        if a in mine and b in mine:
            sides = (mine[a], mine[b])
        elif a in mine and b in base:
            sides = (mine[a], None)
        elif b in mine and a in base:  # no speculation first: its ratios the other way round
            sides = ([[1 / r for r in blk] for blk in mine[b]], None)
        else:
            continue
        if min(len(s) for s in sides if s is not None) < lo:
            continue
        look, basis[(a, b)] = block_look(sides[0], lo, hi, noise, sides[1])
        est[(a, b)], weight[(a, b)] = look.estimate, look.weight
        p[u], p[u + len(tested)] = look.up, look.down
        diffs.pop((a, b), None)


def _one_sided(est, tested) -> np.ndarray:
    """One-sided p-values: "a is faster than b" for every tested pair (up), then "b is faster than a"
    (down)."""
    from scipy import special

    t = np.array([float(est[pair].t()) for pair in tested])
    df = np.array([float(est[pair].df) for pair in tested])
    return np.concatenate([special.stdtr(df, -t), special.stdtr(df, t)]) if tested else np.zeros(0)


@dataclass(frozen=True)
class _Family:
    """The Holm family of one concurrency: each tested pair's estimate and look weight, its two
    one-sided p-values, which of them Holm's step-down rejects, and each one's step."""
    tested: list[tuple[str, str]]
    est: dict
    weight: dict
    alpha: float
    m: int
    rejected: np.ndarray
    step: np.ndarray
    next_level: float

    @classmethod
    def of(cls, tested, est, weight, p: np.ndarray, alpha: float) -> "_Family":
        m = p.size
        rejected = holm(p, alpha) if m else np.zeros(0, dtype=bool)
        order = np.argsort(np.nan_to_num(p, nan=1.0), kind="stable")
        step = np.empty(m, dtype=int)
        step[order] = np.arange(m)
        next_level = alpha / max(m - int(rejected.sum()), 1)
        return cls(tested, est, weight, alpha, m, rejected, step, next_level)

    def judge(self, pair, logs, diffs, share, sequential, noise, margin, statistic, basis=None) -> Comparison:
        """The tested ``pair``'s comparison: its verdict, level and interval, and when undecided what
        would settle it."""
        a, b = pair
        u, e = self.tested.index(pair), self.est[pair]
        if self.rejected[u] or self.rejected[u + len(self.tested)]:
            side = u if self.rejected[u] else u + len(self.tested)
            verdict, level = ("faster" if self.rejected[u] else "slower"), self.alpha / (self.m - int(self.step[side]))
            runs, needs_start = None, False
        elif basis:  # blocks: only more blocks settle it
            verdict, level, runs, needs_start = "undecided", self.next_level, None, False
        else:
            verdict, level = "undecided", self.next_level
            va, vb = (float(np.var(logs[x], ddof=1)) for x in (a, b))
            if pair in diffs:  # paired: the spread of the differences, nothing on the other side
                va, vb = float(np.var(diffs[pair], ddof=1)), 0.0
            center = float(e.center)
            shares = share[a] + share[b]
            final = level * (look_weights(*sequential)[-1] if sequential else 1.0)  # the last look's level
            runs = runs_to_settle(va, vb, center, final, noise, max(len(logs[a]), len(logs[b])),
                                  shares=shares)
            needs_start = runs is None and abs(center) <= start_floor(final, noise, shares)
        level *= self.weight[pair]
        iv = interval_at(statistic, e, 1.0 - 2.0 * level)
        if verdict == "undecided" and margin is not None and 1 / (1 + margin) <= iv.low and iv.high <= 1 + margin:
            verdict, runs, needs_start = EQUIVALENT, None, False
        return Comparison(a, b, iv.ratio, iv, verdict, level, self.m, runs, needs_start, noise, margin, basis)


def _shares(values: Sequence[float], starts: Sequence[int] | None) -> np.ndarray | None:
    """The start shares of a point's first n runs, for every n (None: one server start)."""
    if not starts or len(starts) != len(values):
        return None
    return start_shares(np.asarray(list(starts)))


ONE = "1 + c k"
TWO = "1 + c0 + c k"


@dataclass(frozen=True)
class CostFit:
    c: float | None  # cost per speculative token, in target steps (clipped at 0)
    c_low: float | None  # interval of c (None when too few samples beyond the parameters)
    c_high: float | None
    c0: float  # fixed per-step drafting overhead (0.0 in the one-parameter model)
    model: str  # ONE or TWO
    aic: dict[str, float]  # AIC of each model fitted
    residuals: dict[int, float]  # per k: measured speedup - predicted speedup
    clipped: tuple[str, ...] = ()  # parameters that fitted negative and were set to 0
    n: int = 0
    confidence: float = CONFIDENCE

    def predict(self, e: float, k: int) -> float:
        return e / (1.0 + self.c0 + (self.c or 0.0) * k)


def _aic(rss: float, n: int, p: int) -> float:
    return n * math.log(max(rss, _RSS_FLOOR) / n) + 2 * p


def fit_cost(samples: Sequence[tuple[int, float, float]], confidence: float = CONFIDENCE) -> CostFit | None:
    """Fit ``S(k) = E(k) / (1 + c0 + c k)`` to (k, E, S) medians; None without a usable sample.

    Least squares on ``y = E/S - 1``. The one-parameter model ``y = c k`` (through the origin,
    t interval on n-1 degrees of freedom) is always fitted; the two-parameter model
    ``y = c0 + c k`` (OLS, slope interval on n-2 degrees of freedom) needs 3 distinct k and is
    used only when its AIC (n ln(RSS/n) + 2p) is lower by 2 or more. A negative c is clipped to 0
    (its interval bounds too). A negative c0 means the best fit with c0 >= 0 has c0 = 0, which is
    the one-parameter model: that one is used and "c0" is listed in ``clipped``.

    ``residuals`` holds measured minus predicted speedup per k, averaged over samples sharing a k.
    """
    pts = [(int(k), float(e), float(s)) for k, e, s in samples
           if k is not None and e is not None and s is not None and k > 0
           and math.isfinite(e) and math.isfinite(s) and e > 0 and s > 0]
    if not pts:
        return None
    n = len(pts)
    k = np.array([p[0] for p in pts], dtype=float)
    y = np.array([p[1] / p[2] - 1.0 for p in pts])

    c1 = float(k @ y / (k @ k))
    rss1 = float(np.sum((y - c1 * k) ** 2))
    aic = {ONE: _aic(rss1, n, 1)}
    c, c0, model, low, high = c1, 0.0, ONE, None, None
    if n >= 2:
        half = _t(confidence, n - 1) * math.sqrt(rss1 / (n - 1) / float(k @ k))
        low, high = c1 - half, c1 + half
    clipped: list[str] = []

    if len(set(k.tolist())) >= 3:
        slope, icept = (float(v) for v in np.polyfit(k, y, 1))
        rss2 = float(np.sum((y - icept - slope * k) ** 2))
        aic[TWO] = _aic(rss2, n, 2)
        if aic[TWO] <= aic[ONE] - 2:
            if icept < 0:
                clipped.append("c0")
            else:
                half = _t(confidence, n - 2) * math.sqrt(rss2 / (n - 2) / float(np.sum((k - k.mean()) ** 2)))
                c, c0, model, low, high = slope, icept, TWO, slope - half, slope + half

    if c < 0:
        clipped.append("c")
        c = 0.0
    if low is not None:
        low, high = max(0.0, low), max(0.0, high)
    by_k: dict[int, list[float]] = {}
    for kk, e, s in pts:
        by_k.setdefault(kk, []).append(s - e / (1.0 + c0 + c * kk))
    residuals = {kk: float(np.mean(r)) for kk, r in sorted(by_k.items())}
    return CostFit(c, low, high, c0, model, aic, residuals, tuple(clipped), n, confidence)
