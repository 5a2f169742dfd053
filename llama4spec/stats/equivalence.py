"""Two one-sided tests against +-margin: whether a ratio lies within it (Schuirmann 1987)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from llama4spec.stats.checks import check_margin
from llama4spec.stats.interval import CONFIDENCE, Interval
from llama4spec.stats.tdist import special, t_quantile

MARGIN = 0.02  # equivalence: within +-2% of each other


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
    sp = special()
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
