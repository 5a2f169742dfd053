"""Intervals, comparisons of settings by their difference, and the draft-cost fit (pure, fixed inputs).

Expected numbers come from hand arithmetic or from an independent computation in the test
(a plain numpy bootstrap, the textbook regression formulas), never from the module's output.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from llama4spec.stats.ratio import runs_to_settle
from llama4spec.stats.sequential import allocate
from llama4spec.stats.statistic import LogRatio
from llama4spec.stats.compare import compare
from llama4spec.stats.cost_fit import fit_cost
from llama4spec.stats.interval import BOOTSTRAP_FROM, Interval, interval
from llama4spec.stats.noise import prior as known_noise

T_975_1 = 12.706205  # Student-t 97.5% quantile, 1 degree of freedom (table value)
T_975_2 = 4.302653  # 2 degrees of freedom
T_975_3 = 3.182446  # 3 degrees of freedom
T_975_4 = 2.776445  # 4 degrees of freedom
T_975_64 = 1.997730  # 64 degrees of freedom


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
    assert iv == Interval(812.34, None, None, method="single sample", n=1)
    assert iv.text() == "812.3 (1 sample)"
    assert interval([]) == Interval(None, None, None, method="none")
    assert interval([]).text() == "no samples"


def test_equal_samples_give_a_point_interval() -> None:
    assert interval([4.0, 4.0, 4.0]) == Interval(4.0, 4.0, 4.0, method="t", n=3)
    assert interval([4.0] * 12) == Interval(4.0, 4.0, 4.0, method="bootstrap", n=12)


# compare(): Welch on log throughput with the between-start term, Holm over the concurrency's pairs

def test_a_clearly_faster_setting_is_decided_faster_by_welch_with_the_between_start_term() -> None:
    # logs 5.0, 5.1, 4.9 against 4.0, 4.1, 3.9: difference 1, each variance 0.01; with between_sd 0.1
    # se^2 = 0.01/3 + 0.01/3 + 2 * 0.01 = 0.08/3, df = se^4 / (2 (0.01/3)^2 / 2) = 64. One pair: two
    # one-sided hypotheses, the first Holm step at 0.05/2, so its interval is the two-sided 95% one.
    fast, slow = np.exp([5.0, 5.1, 4.9]), np.exp([4.0, 4.1, 3.9])
    c = compare({"k3": fast, "none": slow}, noise=known_noise(0.10, 0.0, 'test'))
    se = math.sqrt(0.08 / 3)
    ab = c[("k3", "none")]
    assert (ab.verdict, ab.hypotheses, ab.method) == ("faster", 2, "welch") and ab.level == pytest.approx(0.025)
    assert ab.interval.df == pytest.approx(64.0)
    assert ab.ratio == pytest.approx(math.e)
    assert (ab.interval.low, ab.interval.high) == pytest.approx(
        (math.exp(1 - T_975_64 * se), math.exp(1 + T_975_64 * se)), rel=1e-6)
    assert ab.interval.confidence == pytest.approx(0.95) and ab.settle() == "" and ab.sentence() == "faster"
    ba = c[("none", "k3")]  # the mirror
    assert ba.verdict == "slower" and ba.ratio == pytest.approx(1 / math.e)
    assert ba.interval.low == pytest.approx(1 / ab.interval.high) and ba.text().startswith("0.37x [")


def test_without_the_between_start_term_the_same_runs_give_a_narrower_interval() -> None:
    fast, slow = np.exp([5.0, 5.1, 4.9]), np.exp([4.0, 4.1, 3.9])
    wide, narrow = (compare({"a": fast, "b": slow}, noise=known_noise(b, 0.0, 'test'))[("a", "b")].interval for b in (0.10, 0.0))
    # without it: se^2 = 0.02/3, df 4 (Welch with equal spreads: 2n - 2)
    assert narrow.df == pytest.approx(4.0)
    assert narrow.high == pytest.approx(math.exp(1 + T_975_4 * math.sqrt(0.02 / 3)), rel=1e-6)
    assert wide.high - wide.low > narrow.high - narrow.low


def test_holm_levels_over_three_settings_and_agreement_with_the_sequential_core_at_one_look() -> None:
    # k3 is far above none and k1; none and k1 are close. Six one-sided hypotheses: k3 > none is the
    # smallest p (Holm step 1, level 0.05/6), k3 > k1 next (0.05/5); none against k1 stays undecided,
    # its interval at Holm's next level (0.05/4): 97.5% two-sided.
    runs = {"none": np.exp([4.0, 4.1, 3.9]), "k1": np.exp([4.02, 4.12, 3.92]), "k3": np.exp([6.0, 6.1, 5.9])}
    c = compare(runs, noise=known_noise(0.10, 0.0, 'test'))
    assert c[("k3", "none")].verdict == "faster" and c[("k3", "none")].level == pytest.approx(0.05 / 6)
    assert c[("k3", "k1")].verdict == "faster" and c[("k3", "k1")].level == pytest.approx(0.05 / 5)
    open_ = c[("k1", "none")]
    assert open_.verdict == "undecided" and open_.level == pytest.approx(0.05 / 4)
    assert open_.interval.confidence == pytest.approx(0.975) and open_.interval.low < 1 < open_.interval.high
    assert c[("k3", "none")].interval.confidence == pytest.approx(1 - 0.1 / 6)
    assert {x.hypotheses for x in c.values()} == {6}
    # the same rule as stats.sequential at a single look (min_repeats = max_repeats = the runs)
    state = allocate(runs, "none", min_repeats=3, max_repeats=3, statistic=LogRatio(known_noise(0.10, 0.0, 'test'))).points
    assert {pid: state[pid].verdict for pid in ("k1", "k3")} == {pid: c[(pid, "none")].verdict for pid in ("k1", "k3")}


def test_an_undecided_pair_says_how_many_runs_would_settle_it() -> None:
    # logs 0.3 apart, each side's variance 0.04, no between-start term, at level 0.025 (one pair):
    # n = 4: se = sqrt(0.08/4), df 6, t 2.447: 0.346 > 0.3; n = 5: se = sqrt(0.08/5), df 8, t 2.306: 0.292 < 0.3
    assert runs_to_settle(0.04, 0.04, 0.3, 0.025) == 5
    assert runs_to_settle(0.04, 0.04, 0.3, 0.025, start=6) == 6
    # with a between-start log-sd 0.2: z * sqrt(2) * 0.2 = 0.554 > 0.3, no number of runs settles it
    assert runs_to_settle(0.04, 0.04, 0.3, 0.025, noise=known_noise(0.2, 0.0, 'test')) is None
    assert runs_to_settle(0.04, 0.04, 0.0, 0.025) is None
    a, b = np.exp([0.3, 0.5, 0.1]), np.exp([0.0, 0.2, -0.2])  # variance 0.04 each, difference 0.3
    c = compare({"a": a, "b": b}, noise=known_noise(0.0, 0.0, 'test'))[("a", "b")]
    assert c.verdict == "undecided" and c.runs_to_settle == 5 and not c.needs_start
    assert c.settle(short=True) == "about 5 runs a side"
    assert c.sentence().startswith("undecided: about 5 runs a side would settle it")
    stuck = compare({"a": a, "b": b}, noise=known_noise(0.2, 0.0, 'test'))[("a", "b")]
    assert stuck.runs_to_settle is None and stuck.needs_start and stuck.settle(short=True) == "another server start"


def test_single_samples_are_compared_by_their_medians_and_stay_undecided() -> None:
    c = compare({"k2": [150.0], "none": [100.0, 110.0, 90.0]})
    one = c[("k2", "none")]
    assert (one.verdict, one.interval, one.hypotheses) == ("undecided", None, 0)
    assert one.ratio == pytest.approx(1.5) and one.method == "single samples" and one.text() == "1.50x"
    assert one.settle() == "needs at least 2 runs a side"
    # non-positive or non-finite runs are dropped before comparing
    assert compare({"a": [0.0, 120.0], "b": [100.0, float("nan")]})[("a", "b")].interval is None


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
