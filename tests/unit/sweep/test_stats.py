"""Intervals, speedup ratios, choices, verdicts and the draft-cost fit (pure, fixed inputs).

Expected numbers come from hand arithmetic or from an independent computation in the test
(a plain numpy bootstrap, the textbook regression formulas), never from the module's output.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from llama4spec.sweep.stats import (
    BOOTSTRAP_FROM, Interval, choose, fit_cost, interval, ratio_interval, verdict,
)

T_975_1 = 12.706205  # Student-t 97.5% quantile, 1 degree of freedom (table value)
T_975_2 = 4.302653  # 2 degrees of freedom
T_975_3 = 3.182446  # 3 degrees of freedom


def _numpy_bootstrap(groups, statistic, seed=123, resamples=20000):
    """Percentile bootstrap written out: resample every group independently, take 2.5/97.5%."""
    rng = np.random.default_rng(seed)
    stats = []
    for _ in range(resamples):
        stats.append(statistic(*(rng.choice(g, size=len(g), replace=True) for g in groups)))
    return float(np.percentile(stats, 2.5)), float(np.percentile(stats, 97.5))


# interval()

def test_three_samples_give_the_student_t_interval_of_the_mean() -> None:
    iv = interval([11.0, 12.0, 13.0])
    half = T_975_2 * 1.0 / math.sqrt(3)  # s = 1
    assert (iv.method, iv.n, iv.median) == ("t", 3, 12.0)
    assert iv.low == pytest.approx(12 - half, abs=1e-5) and iv.high == pytest.approx(12 + half, abs=1e-5)
    assert half == pytest.approx(2.484138, abs=1e-5)
    assert iv.text(".2f") == "12.00 [9.52, 14.48]"


def test_the_centre_is_the_median_while_the_t_interval_is_around_the_mean() -> None:
    iv = interval([1.0, 2.0, 6.0])  # median 2, mean 3, s = sqrt(7)
    half = T_975_2 * math.sqrt(7) / math.sqrt(3)
    assert iv.median == 2.0
    assert iv.low == pytest.approx(max(0.0, 3 - half), abs=1e-5) and iv.high == pytest.approx(3 + half, abs=1e-5)


def test_bootstrap_from_ten_samples_is_deterministic_and_matches_a_plain_bootstrap() -> None:
    nine = [float(x) for x in range(1, 10)]
    ten = [float(x) for x in range(1, 11)]
    assert BOOTSTRAP_FROM == 10
    assert interval(nine).method == "t"
    iv = interval(ten)
    assert (iv.method, iv.n, iv.median) == ("bootstrap", 10, 5.5)
    assert interval(ten) == iv and interval(list(reversed(ten))) == iv
    low, high = _numpy_bootstrap([np.array(ten)], np.median)
    assert iv.low == pytest.approx(low, abs=0.5) and iv.high == pytest.approx(high, abs=0.5)
    assert 1.0 <= iv.low < 5.5 < iv.high <= 10.0


def test_one_sample_has_no_interval_and_non_finite_samples_are_dropped() -> None:
    iv = interval([812.34, None, float("nan"), float("inf")])
    assert iv == Interval(812.34, None, None, 1, "single sample")
    assert iv.text() == "812.3 (1 sample)"
    assert interval([]) == Interval(None, None, None, 0, "none")
    assert interval([]).text() == "no samples"


def test_equal_samples_give_a_point_interval() -> None:
    assert interval([4.0, 4.0, 4.0]) == Interval(4.0, 4.0, 4.0, 3, "t")
    assert interval([4.0] * 12) == Interval(4.0, 4.0, 4.0, 12, "bootstrap")


def test_overlaps() -> None:
    a = Interval(10, 8, 12, 3, "t")
    assert a.overlaps(Interval(13, 12, 14, 3, "t"))  # closed: touching counts
    assert not a.overlaps(Interval(14, 12.5, 15, 3, "t"))
    single = Interval(10, None, None, 1, "single sample")
    assert not a.overlaps(Interval(11, None, None, 1, "single sample"))
    assert a.overlaps(single) and single.overlaps(Interval(10, None, None, 1, "single sample"))


# ratio_interval()

def test_paired_ratio_is_the_interval_of_the_per_repeat_ratios() -> None:
    iv = ratio_interval([110.0, 120.0, 130.0], [100.0, 100.0, 100.0])  # ratios 1.1, 1.2, 1.3
    half = T_975_2 * 0.1 / math.sqrt(3)
    assert (iv.method, iv.n) == ("t", 3) and iv.median == pytest.approx(1.2)
    assert iv.low == pytest.approx(1.2 - half, abs=1e-6) and iv.high == pytest.approx(1.2 + half, abs=1e-6)


def test_paired_ratio_drops_a_pair_whose_baseline_is_zero() -> None:
    iv = ratio_interval([110.0, 120.0, 130.0], [100.0, 0.0, 100.0])  # ratios 1.1, 1.3
    half = T_975_1 * math.sqrt(0.02) / math.sqrt(2)
    assert iv.n == 2 and iv.median == pytest.approx(1.2)
    assert iv.low == pytest.approx(max(0.0, 1.2 - half), abs=1e-5) and iv.high == pytest.approx(1.2 + half, abs=1e-5)


def test_unpaired_ratio_bootstraps_the_ratio_of_medians() -> None:
    num, den = [10.0, 11.0, 12.0, 13.0], [4.0, 5.0, 6.0]
    iv = ratio_interval(num, den)
    assert iv.method == "bootstrap" and iv.median == pytest.approx(11.5 / 5.0)
    assert ratio_interval(num, den) == iv
    low, high = _numpy_bootstrap([np.array(num), np.array(den)], lambda a, b: np.median(a) / np.median(b))
    assert iv.low == pytest.approx(low, rel=0.03) and iv.high == pytest.approx(high, rel=0.03)
    assert iv.low < iv.median < iv.high


def test_unpaired_ratio_against_a_constant_baseline_is_the_numerator_bootstrap_scaled() -> None:
    iv = ratio_interval([10.0, 11.0, 12.0, 13.0], [5.0, 5.0, 5.0])
    assert iv.median == pytest.approx(2.3)
    # A resample's median is 10 with probability P(3 or 4 of 4 draws are 10) = 13/256 > 2.5%,
    # likewise 13 at the top: the percentile interval is exactly [10, 13] / 5.
    assert iv.low == pytest.approx(2.0) and iv.high == pytest.approx(2.6)


def test_one_sample_each_is_the_single_ratio() -> None:
    iv = ratio_interval([150.0], [100.0])
    assert (iv.median, iv.low, iv.high, iv.method) == (1.5, None, None, "single sample")
    assert ratio_interval([150.0], [0.0]).method == "none"


# choose()

def _iv(median: float, half: float | None) -> Interval:
    if half is None:
        return Interval(median, None, None, 1, "single sample")
    return Interval(median, median - half, median + half, 3, "t")


def test_a_clear_winner_is_chosen_alone() -> None:
    ch = choose([("none", _iv(100, 5)), ("k=1", _iv(150, 10)), ("k=2", _iv(200, 10))])
    assert (ch.best, ch.tied, ch.recommended, ch.confident) == ("k=2", ("k=2",), "k=2", True)
    assert ch.sentence() == "k=2"


def test_two_overlapping_settings_recommend_the_smaller() -> None:
    ch = choose([("none", _iv(100, 5)), ("k=2", _iv(200, 20)), ("k=3", _iv(205, 10))])
    assert (ch.best, ch.tied, ch.recommended) == ("k=3", ("k=2", "k=3"), "k=2")
    assert ch.sentence() == "k=2 and k=3 tie (intervals overlap); the smaller one is recommended: k=2"


def test_three_way_tie_lists_all() -> None:
    ch = choose([("k=1", _iv(195, 10)), ("k=2", _iv(200, 10)), ("k=3", _iv(198, 10)), ("k=4", _iv(150, 5))])
    assert (ch.best, ch.tied, ch.recommended) == ("k=2", ("k=1", "k=2", "k=3"), "k=1")
    assert ch.sentence().startswith("k=1, k=2 and k=3 tie (intervals overlap); ")
    assert ch.sentence().endswith("recommended: k=1")


def test_single_samples_choose_the_highest_without_confidence() -> None:
    ch = choose([("none", _iv(100, None)), ("k=2", _iv(180, None)), ("k=3", _iv(190, None))])
    assert (ch.best, ch.tied, ch.recommended, ch.confident) == ("k=3", ("k=3",), "k=3", False)
    assert ch.sentence() == "k=3 (single samples: no interval)"
    assert choose([]).best is None
    assert choose([("none", Interval(None, None, None, 0, "none"))]).sentence() == "no measurement"


# verdict()

def test_verdict_all_cases() -> None:
    assert verdict(Interval(1.3, 1.1, 1.5, 3, "t")) == "faster (95% confidence)"
    assert verdict(Interval(0.8, 0.7, 0.9, 3, "t")) == "slower (95% confidence)"
    assert verdict(Interval(1.05, 0.95, 1.15, 3, "t")) == "no significant difference (interval spans 1)"
    assert verdict(Interval(1.3, None, None, 1, "single sample")) == "one sample: no confidence"


# fit_cost()

def _samples(y_of_k, ks=range(1, 6)):
    """(k, E, S) with E = 1 + 0.8 k and S chosen so that E/S - 1 = y_of_k(k)."""
    return [(k, 1 + 0.8 * k, (1 + 0.8 * k) / (1 + y_of_k(k))) for k in ks]


def test_exact_one_parameter_data() -> None:
    fit = fit_cost(_samples(lambda k: 0.2 * k))
    assert fit.model == "1 + c k" and fit.c0 == 0.0 and fit.c == pytest.approx(0.2)
    assert fit.c_low == pytest.approx(0.2, abs=1e-9) and fit.c_high == pytest.approx(0.2, abs=1e-9)
    assert list(fit.residuals) == [1, 2, 3, 4, 5]
    assert all(r == pytest.approx(0, abs=1e-12) for r in fit.residuals.values())
    assert fit.predict(1 + 0.8 * 3, 3) == pytest.approx(3.4 / 1.6)


def test_data_with_a_fixed_overhead_selects_the_two_parameter_model() -> None:
    fit = fit_cost(_samples(lambda k: 0.3 + 0.1 * k))
    assert fit.model == "1 + c0 + c k"
    assert fit.aic["1 + c0 + c k"] <= fit.aic["1 + c k"] - 2
    assert fit.c == pytest.approx(0.1, abs=1e-9) and fit.c0 == pytest.approx(0.3, abs=1e-9)
    assert fit.c_low == pytest.approx(0.1, abs=1e-6) and fit.c_high == pytest.approx(0.1, abs=1e-6)
    assert all(r == pytest.approx(0, abs=1e-9) for r in fit.residuals.values())


def test_noisy_one_parameter_data_keeps_the_one_parameter_model() -> None:
    noise = {1: 0.02, 2: -0.01, 3: 0.0, 4: 0.015, 5: -0.02}
    fit = fit_cost(_samples(lambda k: 0.2 * k + noise[k]))
    k = np.arange(1, 6, dtype=float)
    y = 0.2 * k + np.array([noise[i] for i in range(1, 6)])
    # Regression through the origin, textbook formulas: c = Sxy/Sxx, se^2 = RSS/(n-1)/Sxx.
    c = float(np.sum(k * y) / np.sum(k * k))
    assert c == pytest.approx(0.2 - 0.04 / 55)
    rss1 = float(np.sum((y - c * k) ** 2))
    half = 2.776445 * math.sqrt(rss1 / 4 / np.sum(k * k))  # t_{0.975,4}
    # The straight line with intercept, for the AIC comparison.
    x = np.column_stack([np.ones(5), k])
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    rss2 = float(np.sum((y - x @ beta) ** 2))
    aic1, aic2 = 5 * math.log(rss1 / 5) + 2, 5 * math.log(rss2 / 5) + 4
    assert aic2 > aic1 - 2
    assert fit.model == "1 + c k" and fit.c0 == 0.0
    assert fit.aic["1 + c k"] == pytest.approx(aic1) and fit.aic["1 + c0 + c k"] == pytest.approx(aic2)
    assert fit.c == pytest.approx(c)
    assert fit.c_low == pytest.approx(c - half, rel=1e-5) and fit.c_high == pytest.approx(c + half, rel=1e-5)
    e3 = 1 + 0.8 * 3
    assert fit.residuals[3] == pytest.approx(e3 / (1 + y[2]) - e3 / (1 + c * 3))


def test_two_parameter_slope_interval_uses_n_minus_2_degrees_of_freedom() -> None:
    noise = {1: 0.001, 2: -0.002, 3: 0.0, 4: 0.002, 5: -0.001}
    fit = fit_cost(_samples(lambda k: 0.5 + 0.1 * k + noise[k]))
    assert fit.model == "1 + c0 + c k"
    k = np.arange(1, 6, dtype=float)
    y = 0.5 + 0.1 * k + np.array([noise[i] for i in range(1, 6)])
    sxx = float(np.sum((k - 3) ** 2))  # 10
    slope = float(np.sum((k - 3) * (y - y.mean())) / sxx)
    icept = float(y.mean() - slope * 3)
    rss = float(np.sum((y - icept - slope * k) ** 2))
    half = T_975_3 * math.sqrt(rss / 3 / sxx)
    assert fit.c == pytest.approx(slope) and fit.c0 == pytest.approx(icept)
    assert fit.c_low == pytest.approx(slope - half, rel=1e-5)
    assert fit.c_high == pytest.approx(slope + half, rel=1e-5)


def test_a_negative_fixed_overhead_falls_back_to_the_one_parameter_model() -> None:
    # E/S - 1 = 0.2, 0.5, 0.8 at k = 1, 2, 3 lie on -0.1 + 0.3 k: the line with an intercept fits exactly
    # but its c0 is negative, so the fit through the origin is used, c = (1*0.2 + 2*0.5 + 3*0.8) / (1 + 4 + 9)
    fit = fit_cost([(1, 1.8, 1.5), (2, 2.4, 1.6), (3, 2.7, 1.5)])
    assert fit.model == "1 + c k" and fit.c0 == 0.0 and fit.clipped == ("c0",)
    assert fit.c == pytest.approx(3.6 / 14)


def test_negative_cost_is_clipped_and_reported() -> None:
    fit = fit_cost(_samples(lambda k: -0.05 * k, ks=[1, 2]))
    assert fit.c == 0.0 and "c" in fit.clipped
    assert fit.residuals[2] == pytest.approx(2.6 / 0.9 - 2.6)


def test_repeated_k_averages_residuals_and_unusable_samples_are_dropped() -> None:
    fit = fit_cost([(2, 2.0, 2.0 / 1.4), (2, 2.0, 2.0 / 1.6), (0, 1.0, 1.0), (3, 2.0, 0.0), (1, -1.0, 1.0)])
    # y = 0.4 and 0.6 at k = 2: c = (2*0.4 + 2*0.6) / 8 = 0.25, predicted S = 2 / 1.5
    assert fit.c == pytest.approx(0.25) and list(fit.residuals) == [2]
    assert fit.residuals[2] == pytest.approx((2 / 1.4 + 2 / 1.6) / 2 - 2 / 1.5)
    assert "1 + c0 + c k" not in fit.aic  # one distinct k


def test_one_sample_has_no_cost_interval_and_nothing_usable_gives_none() -> None:
    fit = fit_cost([(3, 2.5, 2.0)])
    assert fit.c == pytest.approx(0.25 / 3) and fit.c_low is None and fit.c_high is None
    assert fit_cost([]) is None and fit_cost([(0, 1.0, 1.0), (2, 2.0, -1.0)]) is None


def test_a_t_interval_of_non_negative_samples_stays_non_negative() -> None:
    iv = interval([1.0, 2.0, 60.0])  # mean 21, s = 33.8: mean - t s / sqrt(3) < 0
    assert iv.low == 0.0 and iv.high == pytest.approx(21.0 + 4.302653 * 33.7787 / 3 ** 0.5, rel=1e-4)
    assert interval([-1.0, 2.0, 60.0]).low < 0  # a quantity that can be negative keeps its interval
