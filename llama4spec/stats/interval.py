"""The one interval type, and a figure's interval over repeated measurements.

``Interval`` is a value with its two-sided interval: the median of a point's repeats (``interval``:
Student-t of the mean for fewer than ``BOOTSTRAP_FROM`` repeats, a seeded percentile bootstrap of the
median from there on), or a ratio of one setting against another (``ratio``: the ratio of
geometric means, on ``df`` degrees of freedom, with the log ratio ``center`` and its ``se`` where the
comparison gives them). Intervals of one setting describe it; they never decide between two.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from llama4spec.stats.tdist import t_quantile

CONFIDENCE = 0.95
BOOTSTRAP_FROM = 10  # Student-t below this many samples, bootstrap from it on
_RESAMPLES = 9999


@dataclass(frozen=True)
class Interval:
    """A value with its two-sided interval at ``confidence``.

    ``method`` says how it was found: "t" (Student-t), "bootstrap", "single sample" or "none" for a
    median of samples; "welch", "paired" or "blocks" for a comparison's ratio; "components" (the
    noise components' variance) or "blocks" for a ratio from ``stats.ratio``/``stats.blocks``.
    ``low`` and ``high`` are None when they cannot be computed (fewer than 2 samples)."""

    value: float | None  # the median of the samples, or the ratio (a against b); None without samples
    low: float | None
    high: float | None
    confidence: float = CONFIDENCE
    method: str = ""
    n: int = 0  # the samples a median came from
    df: float = math.inf  # a ratio's degrees of freedom
    center: float | None = None  # a ratio's log, where its comparison gives it
    se: float | None = None  # the standard error of ``center``
    noise: str = ""  # the noise estimate a ratio used (``Noise.text``), where it used one

    @property
    def median(self) -> float | None:
        """The value, read as the median of samples."""
        return self.value

    @property
    def ratio(self) -> float | None:
        """The value, read as a ratio of geometric means."""
        return self.value

    @property
    def bounded(self) -> bool:
        return self.low is not None and self.high is not None

    def excludes_one(self) -> bool:
        return self.low > 1.0 or self.high < 1.0

    def inverse(self) -> Interval:
        """The ratio the other way round (b against a); a bound of 0 turns to inf (a look with no
        estimate yet has the interval [0, inf])."""
        value, high, low = (1 / x if x > 0 else math.inf for x in (self.value, self.high, self.low))
        return Interval(value, high, low, self.confidence, self.method, df=self.df)

    def text(self, fmt: str = ".1f") -> str:
        """``812.3 [790.1, 830.2]``, ``812.3 (1 sample)``, or ``no samples``."""
        if self.value is None:
            return "no samples"
        if not self.bounded:
            return f"{self.value:{fmt}} ({self.n} sample{'' if self.n == 1 else 's'})"
        return f"{self.value:{fmt}} [{self.low:{fmt}}, {self.high:{fmt}}]"


def log_interval(center: float, se: float, df: float, confidence: float, method: str, noise: str = "") -> Interval:
    """A log ratio ``center`` with its standard error on ``df`` as a ratio interval (no bound where
    the quantile is infinite: 0 df)."""
    half = t_quantile(df, 0.5 + confidence / 2) * se
    low, high = (math.exp(center - half), math.exp(center + half)) if math.isfinite(half) else (0.0, math.inf)
    return Interval(math.exp(center), low, high, confidence, method, df=df, center=center, se=se, noise=noise)


def finite(samples: Sequence[float | None]) -> list[float]:
    return [float(x) for x in samples if x is not None and math.isfinite(x)]


# scipy.stats takes over half a second to import: loaded on first use, so that importing the
# package (and the CLI above it) stays instant.

def t_two_sided(confidence: float, df: int) -> float:
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
    xs = finite(samples)
    n = len(xs)
    if n == 0:
        return Interval(None, None, None, confidence, "none")
    med = float(np.median(xs))
    if n == 1:
        return Interval(med, None, None, confidence, "single sample", 1)
    method = "t" if n < BOOTSTRAP_FROM else "bootstrap"
    if min(xs) == max(xs):
        return Interval(med, med, med, confidence, method, n)
    if method == "t":
        mean = float(np.mean(xs))
        half = t_two_sided(confidence, n - 1) * float(np.std(xs, ddof=1)) / math.sqrt(n)
        low = mean - half
        if min(xs) >= 0 and low < 0:
            low = 0.0  # a quantity that cannot be negative (throughput, latency, a ratio) is not
        return Interval(med, low, mean + half, confidence, method, n)
    low, high = _bootstrap((np.asarray(xs),), _median_of, confidence, seed)
    return Interval(med, low, high, confidence, method, n)

