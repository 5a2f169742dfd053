"""Request capacity as the crossing of a fitted curve: one decreasing curve of attainment against
the request rate, fitted to every probe run of a server, and the rate at which it crosses the
SLO's attainment (pure, no I/O).

The model. Each run is one observation: ``attained`` good requests of ``total`` sent at ``rate``.
Requests within a run share the queue, so they are not independent: the run is the unit. The
mean attainment follows a logistic curve in log rate, ``logit p = b0 + b1 (log rate - c)``
(``c`` the runs' mean log rate), fitted by quasi-binomial maximum likelihood (iteratively
reweighted least squares, each run weighted by its requests); the dispersion ``phi`` is the
runs' Pearson chi-square over its degrees of freedom (runs - 2), taken as at least 1 (the
binomial variance is the least a run's attainment has), and scales the fit's covariance.

Runs that stalled. On a starved front end a run can stall (docs/capacity.md: attainment 0.035 at
a rate where the runs beside it attained about 0.9); one such run multiplies the dispersion (there
from about 45 to 204) and leaves the interval open. So the fit sets outlying runs aside by the
Bonferroni outlier test (R's ``car::outlierTest``; Weisberg, *Applied Linear Regression*, ch. 9):
the run with the largest standardized Pearson residual is compared with the curve fitted to the
other runs, its prediction error over its standard error under their dispersion (a binomial variance
kept at least that at ``NEAR``, since far from the crossing the runs show no noise to estimate, plus
the curve's own variance there), as Student's t on their degrees of freedom; two-sided and
multiplied by the runs tested, a p-value below ``OUTLIER_LEVEL`` sets the run aside and the next is
tested. At least ``MIN_FIT_RUNS`` runs stay and at most ``MAX_OUTLIER_SHARE`` of them are set aside.
A run set aside is no part of the fit, the dispersion, the isotonic curve, the lack-of-fit test
or the per-metric fits, and the answer names it with its attainment, the curve's and its p-value
(``Answer.outliers``). Under the simulation's beta-binomial runs (no stalls) about 1% of searches
set a run aside at design effect 9, and the interval's coverage is unchanged.

The binding constraint comes from the same fits per constrained metric (each run's share of
requests within that metric's threshold alone): the metric whose curve crosses the target at
the lowest rate.

What is controlled. The interval holds the capacity with about ``confidence`` when the curve is
logistic in log rate, runs are independent given the rate and a run set aside was not one of them (the simulation in
tests/unit/capacity/test_capacity_fit.py and benchmarks/capacity_fit_sim.py measures it for
design effects 1, 4 and 9); the stop rule looks after every run, and that simulation measures
what the looks cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from llama4spec.capacity.curve import NEAR, Fit, clipped, crossing, expit, isotonic, lack_of_fit, separated
from llama4spec.errors import UserError

PRECISION = 0.10  # the interval's relative half-width at which the search stops
CONFIDENCE = 0.95  # of the capacity's interval
MAX_RUNS = 40  # the probe budget: runs per server
MIN_FIT_RUNS = 5  # the fewest runs the search stops on (the fit has runs - 2 degrees of freedom)
SHAPE_LEVEL = 0.01
MIN_RATE, MAX_RATE = 0.01, 10_000.0
OUTLIER_LEVEL = 0.01  # a run is an outlier when its Bonferroni-adjusted p-value is below this
MAX_OUTLIER_SHARE = 0.2  # at most this share of the runs is set aside as outliers

MAX_RUNS_SAID = 100_000  # more runs than this to reach the precision are said as "more than" this


@dataclass(frozen=True)
class Run:
    """One open-loop benchmark run at ``rate`` (requests per second)."""

    rate: float
    attained: float  # good requests (every threshold held)
    total: int  # requests sent (a failed request is a miss)
    per_metric: Mapping[str, float] | None = None  # metric -> share of requests within that metric's threshold

    @property
    def attainment(self) -> float:
        return self.attained / self.total


@dataclass(frozen=True)
class Settings:
    start: float  # the first rate probed
    target: float = 0.95  # the SLO's attainment
    precision: float = PRECISION
    confidence: float = CONFIDENCE
    max_runs: int = MAX_RUNS
    floor: float = MIN_RATE
    cap: float = MAX_RATE


def settings_problems(s: Settings) -> list[str]:
    """Every problem with a fitted search's settings, one line each."""
    return [*fit_problems(s), *rate_problems(s)]


def fit_problems(s: Settings) -> list[str]:
    """The problems of a fitted search's own settings: precision, attainment, confidence, probe budget."""
    problems = []
    if not (isinstance(s.precision, (int, float)) and 0 < s.precision < 1):
        problems.append(f"precision must lie in (0, 1): the capacity interval's half-width relative to the "
                        f"capacity, e.g. 0.10 for +-10%; not {s.precision}")
    if not (isinstance(s.target, (int, float)) and 0 < s.target < 1):
        problems.append(f"the attainment must lie in (0, 1), not {s.target}")
    if not (isinstance(s.confidence, (int, float)) and 0.5 < s.confidence < 1):
        problems.append(f"the confidence must lie in (0.5, 1), not {s.confidence}")
    if not (isinstance(s.max_runs, int) and MIN_FIT_RUNS <= s.max_runs <= 1000):
        problems.append(f"the probe budget must be {MIN_FIT_RUNS} to 1000 runs, not {s.max_runs}")
    return problems


def rate_problems(s: Settings) -> list[str]:
    """The problems of a fitted search's rates: lowest, highest and start."""
    problems = []
    if not (isinstance(s.floor, (int, float)) and isinstance(s.cap, (int, float))
            and MIN_RATE <= s.floor < s.cap <= MAX_RATE):
        problems.append(f"the rates must satisfy {MIN_RATE:g} <= lowest < highest <= {MAX_RATE:g}, "
                        f"not {s.floor} and {s.cap}")
    elif not (isinstance(s.start, (int, float)) and s.floor <= s.start <= s.cap):
        problems.append(f"the start rate must lie in [{s.floor:g}, {s.cap:g}] requests per second, not {s.start}")
    return problems


def checked(settings: Settings) -> Settings:
    """``settings``, or UserError naming every problem (one line each)."""
    problems = settings_problems(settings)
    if problems:
        raise UserError(*problems)
    return settings


# -- the fit --------------------------------------------------------------------------------------


def fit(runs: Sequence[Run], attained: Sequence[float] | None = None) -> Fit | None:
    """The quasi-binomial logistic fit of the runs (``attained``: good requests per run, default each
    run's own), or None when no fit exists (``separated``) or it does not converge."""
    counts = [r.attained for r in runs] if attained is None else list(attained)
    points = [Run(r.rate, a, r.total) for r, a in zip(runs, counts)]
    if len(points) < 3 or separated(points):
        return None
    xs = [math.log(r.rate) for r in points]
    center = sum(xs) / len(xs)
    us = [x - center for x in xs]
    ns = [float(r.total) for r in points]
    ys = [min(1.0, max(0.0, a / n)) for a, n in zip(counts, ns)]
    b0, b1 = 0.0, 0.0
    for _ in range(100):
        s0 = s1 = s2 = t0 = t1 = 0.0
        for u, n, y in zip(us, ns, ys):
            p = clipped(expit(b0 + b1 * u))  # a run far from a steep crossing weighs next to nothing
            w = n * p * (1 - p)
            z = b0 + b1 * u + (y - p) / (p * (1 - p))
            s0, s1, s2, t0, t1 = s0 + w, s1 + w * u, s2 + w * u * u, t0 + w * z, t1 + w * z * u
        det = s0 * s2 - s1 * s1
        if det <= 0:
            return None
        n0, n1 = (s2 * t0 - s1 * t1) / det, (s0 * t1 - s1 * t0) / det
        done = abs(n0 - b0) + abs(n1 - b1) < 1e-9 * (1 + abs(n0) + abs(n1))
        b0, b1 = n0, n1
        if done:
            break
    else:
        return None
    if not (math.isfinite(b0) and math.isfinite(b1)) or abs(b1) > 1e4:
        return None
    chi2, near = 0.0, 0
    s0 = s1 = s2 = 0.0
    for u, n, y in zip(us, ns, ys):
        p = expit(b0 + b1 * u)
        w = n * p * (1 - p)
        if NEAR <= p <= 1 - NEAR:
            chi2, near = chi2 + n * (y - p) ** 2 / (p * (1 - p)), near + 1
        s0, s1, s2 = s0 + w, s1 + w * u, s2 + w * u * u
    det = s0 * s2 - s1 * s1
    df = max(1, near - 2)
    return Fit(b0, b1, center, (s2 / det, -s1 / det, s0 / det), max(1.0, chi2 / df), df, chi2)


@dataclass(frozen=True)
class Outlier:
    """A run set aside from the fit: its attainment lies further from the curve fitted to the other
    runs than those runs' own dispersion allows (the Bonferroni outlier test, ``robust_fit``)."""

    index: int  # its place among the runs given
    rate: float
    attainment: float
    expected: float  # the attainment the other runs' curve gives at its rate
    t: float  # (attainment - expected) / its standard error under the other runs' dispersion
    p: float  # two-sided, Bonferroni-adjusted over the runs tested (at most 1)

    def record(self) -> dict[str, float | int | str]:
        """As search.json and capacity.json keep it."""
        return {"run": self.index, "rate": self.rate, "attainment": self.attainment, "expected": self.expected,
                "t": self.t, "p_bonferroni": self.p, "why": self.words()}

    def words(self) -> str:
        return (f"the run at {self.rate:g} req/s attained {self.attainment:.3f} where the other runs' curve gives "
                f"{self.expected:.3f} (t = {self.t:.3g}, Bonferroni p = {self.p:.2g}): set aside as an outlier")


def _outlier_test(runs: Sequence[Run], counts: Sequence[float], i: int, tested: int) -> Outlier | None:
    """Run ``i`` against the fit of the others: the prediction error over its standard error (the
    others' dispersion times a binomial variance kept at least that at NEAR, plus the curve's own
    variance there), Student's t on the others' degrees of freedom, Bonferroni over ``tested`` runs."""
    from scipy import stats

    others = [j for j in range(len(runs)) if j != i]
    f = fit([runs[j] for j in others], [counts[j] for j in others])
    if f is None:
        return None
    r = runs[i]
    p = f.attainment(r.rate)
    u = math.log(r.rate) - f.center
    v00, v01, v11 = f.cov
    curve = (p * (1 - p)) ** 2 * f.dispersion * max(0.0, v00 + 2 * u * v01 + u * u * v11)  # delta method
    var = f.dispersion * max(p * (1 - p), NEAR * (1 - NEAR)) / r.total + curve
    y = min(1.0, max(0.0, counts[i] / r.total))
    t = (y - p) / math.sqrt(var)
    adjusted = min(1.0, tested * 2 * float(stats.t.sf(abs(t), f.df)))
    return Outlier(i, r.rate, y, p, t, adjusted)


def robust_fit(runs: Sequence[Run], attained: Sequence[float] | None = None,
               level: float = OUTLIER_LEVEL) -> tuple[Fit | None, tuple[Outlier, ...]]:
    """The fit with outlying runs set aside, and those runs (the rule: the module docstring). One at a
    time, the run with the largest standardized Pearson residual is tested against the fit of the
    others; while it is an outlier it is set aside and the next is tested, keeping at least
    MIN_FIT_RUNS runs and setting aside at most MAX_OUTLIER_SHARE of them."""
    counts = [r.attained for r in runs] if attained is None else list(attained)
    kept = list(range(len(runs)))
    outliers: list[Outlier] = []
    most = int(MAX_OUTLIER_SHARE * len(runs))
    while True:
        f = fit([runs[j] for j in kept], [counts[j] for j in kept])
        if f is None or len(outliers) >= most or len(kept) - 1 < MIN_FIT_RUNS:
            return f, tuple(outliers)

        def residual(j: int) -> float:
            p = f.attainment(runs[j].rate)
            return abs(counts[j] / runs[j].total - p) / math.sqrt(max(p * (1 - p), NEAR * (1 - NEAR)) / runs[j].total)

        worst = max(kept, key=residual)
        sub = [runs[j] for j in kept]
        test = _outlier_test(sub, [counts[j] for j in kept], kept.index(worst), len(kept))
        if test is None or test.p >= level:
            return f, tuple(outliers)
        outliers.append(Outlier(worst, test.rate, test.attainment, test.expected, test.t, test.p))
        kept.remove(worst)


def kept_runs(runs: Sequence[Run], outliers: Sequence[Outlier]) -> list[Run]:
    """The runs ``robust_fit`` kept: all but those it set aside."""
    aside = {o.index for o in outliers}
    return [r for i, r in enumerate(runs) if i not in aside]


# -- the monotone check ---------------------------------------------------------------------------


# -- the answer -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Answer:
    """One server's request capacity from its runs so far."""

    estimate: float | None  # req/s: the fitted crossing (None: no fitted crossing)
    low: float | None  # the interval (None: open on that side)
    high: float | None
    half_width: float | None  # (high - low) / (2 estimate); None while open
    fit: Fit | None
    shape_fits: bool
    shape: str  # why the logistic shape does not fit ("" when it does)
    isotonic: float | None  # the isotonic curve's crossing
    isotonic_words: str
    binding: str | None  # the metric whose curve crosses the target at the lowest rate
    per_metric: dict[str, float | None] = field(default_factory=dict)  # metric -> its crossing (None: none)
    runs: int = 0
    confidence: float = CONFIDENCE
    outliers: tuple[Outlier, ...] = ()  # runs set aside from the fit, the isotonic curve and the per-metric fits
    precision: float = PRECISION  # the interval's relative half-width sought


def _metric_crossing(runs: Sequence[Run], metric: str, target: float, confidence: float) -> float | None:
    """One metric's crossing: its fit's, else its isotonic curve's; inf when it met the target in
    every run (it does not bind), None when it cannot be told."""
    shares = [r.per_metric[metric] for r in runs]  # type: ignore[index]
    if all(s >= target for s in shares):
        return math.inf
    f = fit(runs, [s * r.total for s, r in zip(shares, runs)])
    if f is not None:
        estimate = crossing(f, target, confidence)[0]
        if estimate is not None:
            return estimate
    return isotonic([Run(r.rate, s * r.total, r.total) for s, r in zip(shares, runs)], target)[0]


def bracketed(runs: Sequence[Run], target: float) -> bool:
    holds = [r.rate for r in runs if r.attainment >= target]
    fails = [r.rate for r in runs if r.attainment < target]
    return bool(holds and fails and min(holds) < max(fails))


def answer(settings: Settings, runs: Sequence[Run]) -> Answer:
    """The capacity the runs give so far: the fitted crossing with its interval, the monotone
    check, the isotonic estimate and the binding metric (the rules: the module docstring)."""
    s = settings
    f, outliers = robust_fit(runs)
    kept = kept_runs(runs, outliers)
    estimate, low, high = crossing(f, s.target, s.confidence) if f is not None else (None, None, None)
    half = (high - low) / (2 * estimate) if estimate is not None and low is not None and high is not None else None
    iso, iso_words = isotonic(kept, s.target)
    shape = ""
    if runs and any(r.attainment >= s.target for r in runs) and any(r.attainment < s.target for r in runs) \
            and not bracketed(runs, s.target):
        shape = "attainment rises with the rate: every rate that held lies above every rate that failed"
    elif f is not None and f.b1 >= 0:
        shape = f"the fitted attainment does not fall with the rate (slope {f.b1:.3g} per unit of log rate)"
    elif f is not None:
        test = lack_of_fit(kept, f)
        if test is not None and test[1] < SHAPE_LEVEL:
            shape = (f"the fitted curve misses the means of the rates probed beyond the runs' noise (lack of fit "
                     f"F = {test[0]:.3g}, p = {test[1]:.2g})")
    metrics = sorted(set.intersection(*(set(r.per_metric or {}) for r in kept))) if kept else []
    per_metric = {m: _metric_crossing(kept, m, s.target, s.confidence) for m in metrics}
    told = {m: c for m, c in per_metric.items() if c is not None and math.isfinite(c)}
    binding = min(told, key=told.get) if told else None
    return Answer(estimate, low, high, half, f, not shape, shape, iso, iso_words, binding,
                  {m: (c if c is not None and math.isfinite(c) else None) for m, c in per_metric.items()},
                  len(runs), s.confidence, outliers, s.precision)


def runs_for_precision(a: Answer) -> int | None:
    """About how many runs in all would narrow ``a``'s closed interval to its precision, at the spread
    its runs had (a half-width falls as one over the root of the runs); None where the interval is
    open or already that narrow."""
    if a.half_width is None or not a.half_width > a.precision or a.runs < 1:
        return None
    ratio = min(a.half_width / a.precision, 1e100)  # squared, still a float
    return math.ceil(a.runs * ratio * ratio)


def wide_words(a: Answer) -> str:
    """Why a search that stopped wider than its precision did, and what narrows it; "" otherwise."""
    n = runs_for_precision(a)
    if n is None or not a.shape_fits:
        return ""
    about = f"about {n}" if n <= MAX_RUNS_SAID else f"more than {MAX_RUNS_SAID:,}"
    return (f"the interval (+-{a.half_width:.0%}) is wider than the +-{a.precision:.0%} sought: {about} runs in "
            f"all would narrow it at these runs' spread; longer runs (duration_s) narrow a run's spread, and where "
            f"even the lowest rates probed attain barely above the target, a limit with more room does")


def describe(name: str, a: Answer) -> str:
    """One server's answer in words."""
    aside = "".join(f"; {o.words()}" for o in a.outliers)
    if not a.shape_fits:
        return f"{name}: the logistic shape does not fit ({a.shape}); isotonic estimate {a.isotonic_words}{aside}"
    if a.estimate is None:
        return f"{name}: no fitted crossing yet; isotonic estimate {a.isotonic_words}{aside}"
    low = f"{a.low:.4g}" if a.low is not None else "open"
    high = f"{a.high:.4g}" if a.high is not None else "open"
    text = f"{name}: request capacity {a.estimate:.4g} req/s [{low}, {high}] ({a.confidence:.0%}, {a.runs} runs)"
    text += f"; {a.binding.upper()} binds" if a.binding else ""
    return text + aside
