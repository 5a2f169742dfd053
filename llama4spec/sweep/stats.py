"""Repeated measurements turned into intervals and verdicts that say how sure they are.

Every benchmark point is measured several times. A point's value is the median of its repeats,
with a 95% interval: Student-t of the mean for fewer than ``BOOTSTRAP_FROM`` repeats (few samples
cannot carry a bootstrap), a percentile bootstrap of the median from there on. Bootstraps use a
fixed seed, so the same samples always give the same interval.

On top of the intervals: the speedup of one setting over another (``ratio_interval``), the
choice among settings that does not pretend to separate overlapping intervals (``choose``), the
answer to "does speculation help" (``verdict``), and the draft-cost model fitted with an
interval and a choice between one and two parameters (``fit_cost``).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

CONFIDENCE = 0.95
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

    def overlaps(self, other: Interval) -> bool:
        """Closed intervals overlap. Without an interval on either side: only equal medians do."""
        if self.bounded and other.bounded:
            return self.low <= other.high and other.low <= self.high
        return self.median is not None and self.median == other.median

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


def ratio_interval(numerator: Sequence[float], denominator: Sequence[float],
                   confidence: float = CONFIDENCE, seed: int = 0) -> Interval:
    """The speedup ``numerator / denominator`` (candidate over baseline) with its interval.

    Equal lengths are paired (repeat i against repeat i): the per-repeat ratios go through
    ``interval`` and a pair is dropped when either side is not finite or the denominator is not
    positive. Different lengths are independent: the median of the candidate over the median of
    the baseline, with a bootstrap resampling each side on its own. A side with one sample (after
    dropping) gives the ratio of medians without an interval ("single sample").
    """
    if len(numerator) == len(denominator):
        ratios = [a / b for a, b in zip(numerator, denominator)
                  if a is not None and b is not None and math.isfinite(a) and math.isfinite(b) and b > 0]
        return interval(ratios, confidence, seed)
    num = _finite(numerator)
    den = [b for b in _finite(denominator) if b > 0]
    if not num or not den:
        return Interval(None, None, None, 0, "none", confidence)
    med = float(np.median(num)) / float(np.median(den))
    n = min(len(num), len(den))
    if n == 1:
        return Interval(med, None, None, 1, "single sample", confidence)
    if min(num) == max(num) and min(den) == max(den):
        return Interval(med, med, med, n, "bootstrap", confidence)

    def ratio_of_medians(a, b, axis=-1):
        return np.median(a, axis=axis) / np.median(b, axis=axis)

    low, high = _bootstrap((np.asarray(num), np.asarray(den)), ratio_of_medians, confidence, seed)
    return Interval(med, low, high, n, "bootstrap", confidence)


@dataclass(frozen=True)
class Choice:
    best: str | None  # label of the setting with the highest median
    tied: tuple[str, ...]  # labels whose intervals overlap the best's (best included), in the given order
    recommended: str | None  # the first of `tied` in the given order (the cheapest setting)
    confident: bool  # False when any value lacks an interval (single samples)

    def sentence(self) -> str:
        if self.recommended is None:
            return "no measurement"
        if len(self.tied) <= 1:
            return self.recommended if self.confident else f"{self.recommended} (single samples: no interval)"
        names = ", ".join(self.tied[:-1]) + f" and {self.tied[-1]}"
        why = "intervals overlap" if self.confident else "equal medians, single samples: no interval"
        which = "the smaller one" if len(self.tied) == 2 else "the smallest"
        return f"{names} tie ({why}); {which} is recommended: {self.recommended}"


def choose(options: Sequence[tuple[str, Interval]]) -> Choice:
    """The best setting, and the settings it cannot be told apart from.

    ``options`` come in the order of preference on a tie (no speculation first, then the smallest
    lookahead); options without a median are ignored. The recommendation is the first option
    whose interval overlaps the best one's: a larger setting must win clearly to be chosen.
    """
    measured = [(label, iv) for label, iv in options if iv.median is not None]
    if not measured:
        return Choice(None, (), None, False)
    best_label, best = max(measured, key=lambda o: o[1].median)  # first of equal maxima
    tied = tuple(label for label, iv in measured if label == best_label or iv.overlaps(best))
    confident = all(iv.bounded for _, iv in measured)
    return Choice(best_label, tied, tied[0], confident)


def verdict(speedup: Interval) -> str:
    """Does speculation beat no speculation (speedup above 1), with the interval's confidence."""
    if speedup.median is None:
        return "no samples"
    if not speedup.bounded:
        return "one sample: no confidence"
    pct = f"{speedup.confidence:.0%}"
    if speedup.low > 1:
        return f"faster ({pct} confidence)"
    if speedup.high < 1:
        return f"slower ({pct} confidence)"
    return "no significant difference (interval spans 1)"


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
