"""The curve under ``capacity_fit``: the quasi-binomial logistic fit of attainment against log rate
(``Fit``, its crossing of a target with Fieller's interval) and the monotone check (a decreasing
isotonic regression, the lack-of-fit test), on runs given as any objects with ``rate``,
``attained``, ``total`` and ``attainment`` (``capacity_fit.Run``) (pure, no I/O).

The capacity is the rate at which the fitted attainment equals the target,
``log rate = c + (logit target - b0) / b1``; its interval is Fieller's: the rates whose
linear predictor is within ``t`` (Student's, on runs - 2 degrees of freedom, two-sided at
``confidence``) standard errors of ``logit target``. It is bounded only when the slope is shown
to be non-zero at that level; otherwise the interval is open on a side and the search goes on.

The monotone check. A decreasing isotonic regression of the runs' attainments (weighted by
requests, ``scipy.optimize.isotonic_regression``) gives a crossing that assumes only that
attainment does not rise with the rate; it is reported beside the fit. The logistic shape is
said not to fit when the fitted slope is not negative (attainment does not fall with the rate),
when no holding rate lies below a failing one, or when runs repeated at one rate show the fitted
curve missing the rates' means beyond the runs' own noise (the lack-of-fit F test: between-rate
against within-rate Pearson variation, at ``SHAPE_LEVEL``). The answer then says so and gives
the isotonic estimate.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

# The dispersion comes from the runs whose fitted attainment lies in [NEAR, 1 - NEAR]: far from the
# crossing a run's attainment is pinned near 0 or 1 and shows its noise too rarely to count.
NEAR = 0.02  # the lack-of-fit test's level
EPS = 1e-12  # the fitted attainment's distance from 0 and 1 in the fit's weights


class Run(Protocol):
    """A run as the curve reads it (``capacity_fit.Run``)."""

    rate: float
    attained: float
    total: int

    @property
    def attainment(self) -> float: ...


def expit(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@functools.lru_cache(maxsize=256)
def t_quantile(df: int, confidence: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.5 + confidence / 2, df))


@dataclass(frozen=True)
class Fit:
    """``logit attainment = b0 + b1 (log rate - center)``, quasi-binomial."""

    b0: float
    b1: float
    center: float
    cov: tuple[float, float, float]  # (var b0, cov, var b1), binomial: multiply by ``dispersion``
    dispersion: float  # Pearson chi-square / df, at least 1
    df: int  # runs - 2
    chi2: float  # Pearson chi-square of the runs the dispersion comes from

    def logit(self, rate: float) -> float:
        return self.b0 + self.b1 * (math.log(rate) - self.center)

    def attainment(self, rate: float) -> float:
        return expit(self.logit(rate))

    def band(self, rate: float, confidence: float) -> tuple[float, float]:
        """The fitted attainment's pointwise interval at ``rate``."""
        u = math.log(rate) - self.center
        v00, v01, v11 = self.cov
        se = math.sqrt(max(0.0, self.dispersion * (v00 + 2 * u * v01 + u * u * v11)))
        z, half = self.logit(rate), t_quantile(max(1, self.df), confidence) * se
        return expit(z - half), expit(z + half)


def separated(runs: Sequence[Run]) -> bool:
    """No maximum-likelihood fit exists: fewer than two rates, or a rate splits the runs into all
    good on one side and none good on the other (complete or quasi-complete separation)."""
    xs = {r.rate for r in runs}
    if len(xs) < 2:
        return True
    good = [r.rate for r in runs if r.attained > 0]
    bad = [r.rate for r in runs if r.attained < r.total]
    if not good or not bad:
        return True
    return max(good) <= min(bad) or max(bad) <= min(good)


def clipped(p: float) -> float:
    """``p`` kept off 0 and 1 by ``EPS``: a run where the fitted attainment rounds to exactly 0 or 1 has
    a weight of (next to) nothing, not a weight that ends the fit."""
    return min(max(p, EPS), 1.0 - EPS)


def logit_of(p: float) -> float:
    return math.log(p / (1 - p))


def crossing(f: Fit, target: float, confidence: float) -> tuple[float | None, float | None, float | None]:
    """(estimate, low, high) of the rate at which the fitted attainment equals ``target``; low or
    high None where Fieller's interval is open on that side (the slope not shown non-zero), the
    estimate None when the slope is not negative."""
    if f.b1 >= 0:
        return None, None, None
    g = logit_of(target)
    d = f.b0 - g
    u_hat = -d / f.b1
    if abs(u_hat) > 50:
        return None, None, None
    estimate = math.exp(f.center + u_hat)
    q = t_quantile(max(1, f.df), confidence) ** 2 * f.dispersion
    v00, v01, v11 = f.cov
    a, b, c = f.b1 * f.b1 - q * v11, d * f.b1 - q * v01, d * d - q * v00
    if a <= 0:
        return estimate, None, None
    root = math.sqrt(max(0.0, b * b - a * c))
    u1, u2 = (-b - root) / a, (-b + root) / a
    if max(abs(u1), abs(u2)) > 50:
        return estimate, None, None
    return estimate, math.exp(f.center + u1), math.exp(f.center + u2)


def isotonic_curve(runs: Sequence[Run]) -> tuple[list[float], list[float]]:
    """The decreasing isotonic regression of the runs' attainments: the rates probed, in order, and
    the fitted attainment at each (the runs at one rate pooled, weighted by their requests)."""
    from scipy.optimize import isotonic_regression

    by_rate: dict[float, list[float]] = {}
    for r in runs:
        got = by_rate.setdefault(r.rate, [0.0, 0.0])
        got[0] += r.attained
        got[1] += r.total
    rates = sorted(by_rate)
    means = np.array([by_rate[x][0] / by_rate[x][1] for x in rates])
    fitted = isotonic_regression(means, weights=np.array([by_rate[x][1] for x in rates]), increasing=False).x
    return rates, [float(v) for v in fitted]


def isotonic(runs: Sequence[Run], target: float) -> tuple[float | None, str]:
    """The crossing of a decreasing isotonic regression of the runs' attainments (weighted by
    requests; log-linear between adjacent rates), and in words where it lies."""
    if not runs:
        return None, "no runs"
    rates, fitted = isotonic_curve(runs)
    if fitted[0] < target:
        return None, f"below {rates[0]:g} req/s: the isotonic curve is under the target at every rate probed"
    if fitted[-1] >= target:
        return None, f"above {rates[-1]:g} req/s: the isotonic curve meets the target at every rate probed"
    i = int(np.argmax(np.asarray(fitted) < target))  # the first rate below the target; the one before meets it
    lo, hi, ylo, yhi = rates[i - 1], rates[i], fitted[i - 1], fitted[i]
    share = (ylo - target) / (ylo - yhi)
    estimate = math.exp(math.log(lo) + share * (math.log(hi) - math.log(lo)))
    return estimate, f"{estimate:.4g} req/s (isotonic, between {lo:g} and {hi:g})"


def lack_of_fit(runs: Sequence[Run], f: Fit) -> tuple[float, float] | None:
    """(F, p-value) of the fitted curve against the means of rates with repeated runs: Pearson
    variation between rates (beyond the fit) over that within rates (at least binomial), on the
    runs whose fitted attainment lies in [NEAR, 1 - NEAR] (the dispersion's); None without
    replicates enough (more than 2 such rates and more runs than rates)."""
    from scipy import stats

    groups: dict[float, list[Run]] = {}
    for r in runs:
        if NEAR <= f.attainment(r.rate) <= 1 - NEAR:
            groups.setdefault(r.rate, []).append(r)
    g, n = len(groups), sum(len(rs) for rs in groups.values())
    if g <= 2 or n <= g:
        return None
    pure = total = 0.0
    for rate, rs in groups.items():
        p = f.attainment(rate)
        mean = sum(r.attained for r in rs) / sum(r.total for r in rs)
        pure += sum(r.total * (r.attainment - mean) ** 2 for r in rs) / (p * (1 - p))
        total += sum(r.total * (r.attainment - p) ** 2 for r in rs) / (p * (1 - p))
    lof = max(0.0, total - pure)
    # within rates, a run varies at least binomially: a mean square below 1 is taken as 1
    statistic = (lof / (g - 2)) / max(1.0, pure / (n - g))
    return statistic, float(stats.f.sf(statistic, g - 2, n - g))
