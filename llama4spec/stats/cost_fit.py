"""The draft-cost model ``S(k) = E(k) / (1 + c0 + c k)`` fitted with an interval, choosing between one
and two parameters by AIC."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from llama4spec.stats.interval import CONFIDENCE, t_two_sided

_RSS_FLOOR = 1e-12  # an exact fit has RSS 0; ln(0) would make the AIC -inf


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
        half = t_two_sided(confidence, n - 1) * math.sqrt(rss1 / (n - 1) / float(k @ k))
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
                half = t_two_sided(confidence, n - 2) * math.sqrt(rss2 / (n - 2) / float(np.sum((k - k.mean()) ** 2)))
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
