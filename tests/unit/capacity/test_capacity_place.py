"""Where the fitted capacity search measures next (capacity/place.py): the candidate whose run
leaves the crossing's least delta-method variance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llama4spec.capacity import fit as cf

from llama4spec.capacity import curve as curve

from llama4spec.capacity import fit_search as cfs
from llama4spec.capacity import place as cp

TARGET = 0.9
LOGIT = math.log(TARGET / (1 - TARGET))


def _fit(seen: list[tuple[float, float, int]]) -> tuple[curve.Fit, list[cf.Run]]:
    runs = [cf.Run(r, round(a * n), n) for r, a, n in seen]
    f = cf.fit(runs)
    assert f is not None and f.b1 < 0
    return f, runs


def test_the_rate_chosen_leaves_the_least_variance_of_every_candidate() -> None:
    f, runs = _fit([(8.0, 1.0, 120), (16.0, 0.97, 240), (32.0, 0.3, 480), (22.6, 0.9, 339), (26.9, 0.7, 403)])
    candidates = [8.0 * 1.025 ** k for k in range(0, 85)]
    rate, variance = cp.best_rate(f.b0, f.b1, f.center, LOGIT, [(r.rate, r.total) for r in runs], candidates)
    us = [math.log(r.rate) - f.center for r in runs]
    info = cp.information(f.b0, f.b1, us, [r.total for r in runs])
    u_star = (LOGIT - f.b0) / f.b1
    per_rate = float(np.median([r.total / r.rate for r in runs]))

    def after(x: float) -> float:
        u = math.log(x) - f.center
        return cp.crossing_variance(info + cp.information(f.b0, f.b1, [u], [per_rate * x]), f.b1, u_star)

    allowed = [x for x in candidates if f.attainment(x) >= cp.LOWEST]
    assert rate in allowed and variance == pytest.approx(min(after(x) for x in allowed), rel=1e-6)
    assert variance < cp.crossing_variance(info, f.b1, u_star)  # a run narrows it
    # the crossing's variance matches the fit's own covariance (binomial units) by the delta method
    v00, v01, v11 = f.cov
    g = np.array([-1 / f.b1, -u_star / f.b1])
    assert cp.crossing_variance(info, f.b1, u_star) == pytest.approx(float(g @ np.array([[v00, v01], [v01, v11]]) @ g),
                                                                      rel=1e-6)


def test_runs_bunched_at_a_flat_crossing_send_the_next_run_wide_of_it() -> None:
    """The real tiny server without speculation on a slow day (docs/capacity.md): its search's runs sat
    between 5.7 and 8.8 req/s with attainment 0.63-1.0 and the slope unknown. The next run goes at least
    two grid steps away from the crossing, where it tells the slope, not at the crossing."""
    s = cf.Settings(start=8.0, target=TARGET, max_runs=24)
    seen = [(8.0, 0.825, 40), (4.007, 0.984, 31), (5.662, 0.871, 31), (5.948, 1.0, 31), (6.73, 0.911, 34),
            (6.73, 0.99, 34), (7.248, 1.0, 37), (7.805, 0.907, 40), (8.0, 0.842, 40), (7.615, 0.983, 39)]
    f, runs = _fit(seen)
    estimate = curve.crossing(f, TARGET, s.confidence)[0]
    d = cfs.decide(s, runs)
    assert d.rate is not None and abs(math.log(d.rate / estimate)) > 2 * math.log1p(s.precision / cfs.GRID)


def test_a_crossing_the_runs_already_pin_gets_its_next_run_near_it() -> None:
    """Runs at many rates on a steep, known curve: the slope is known, the next run goes within 20% of
    the crossing and never where the fitted attainment is below LOWEST."""
    def p(rate: float) -> float:
        return 1 / (1 + math.exp((math.log(rate) - math.log(25.0)) / 0.1 - LOGIT))

    rates = [8.0, 16.0, 32.0, 22.6, 26.9, 24.0, 20.0, 28.0]
    f, runs = _fit([(r, p(r), round(15 * r)) for r in rates])
    estimate = curve.crossing(f, TARGET, 0.95)[0]
    assert estimate == pytest.approx(25.0, rel=0.01)
    rate, _ = cp.best_rate(f.b0, f.b1, f.center, LOGIT, [(r.rate, r.total) for r in runs],
                           [8.0 * 1.025 ** k for k in range(0, 85)])
    assert abs(math.log(rate / estimate)) < math.log(1.2) and f.attainment(rate) >= cp.LOWEST


def test_where_every_candidate_lies_deep_in_overload_the_lowest_is_taken() -> None:
    f, runs = _fit([(8.0, 1.0, 120), (16.0, 0.97, 240), (32.0, 0.3, 480), (22.6, 0.9, 339), (26.9, 0.7, 403)])
    rate, variance = cp.best_rate(f.b0, f.b1, f.center, LOGIT, [(r.rate, r.total) for r in runs], [300.0, 200.0])
    assert rate == 200.0 and variance == math.inf
    with pytest.raises(ValueError):
        cp.best_rate(f.b0, f.b1, f.center, LOGIT, [(r.rate, r.total) for r in runs], [])
