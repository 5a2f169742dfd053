"""The losslessness check's statistics and verdicts (pure, seeded, no engine)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llama4spec.lossless import check, exact, stats
from llama4spec.lossless.settings import Settings, temperature_problems
from llama4spec.tiny import spread
from llama4spec.tiny.words import successor


def test_first_divergence_and_the_top2_gap():
    assert stats.first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert stats.first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert stats.first_divergence([1, 2], [1, 2, 3]) == 2  # one stopped earlier
    assert stats.top2_gap([-0.1, -2.5, -3.0]) == pytest.approx(2.4)
    assert stats.top2_gap([-0.7]) is None


def test_fisher_compares_speculation_with_the_engines_own_divergence():
    assert stats.compare_rates(0, 4, 0, 4).p_value == 1.0
    assert stats.compare_rates(4, 4, 0, 4).p_value == pytest.approx(1 / 70)  # one table in C(8, 4)
    assert stats.compare_rates(3, 20, 3, 20).p_value > 0.5  # the engine diverges as often without a draft
    with pytest.raises(ValueError):
        stats.compare_rates(5, 4, 0, 4)


def test_the_multinomial_test_holds_its_level_and_finds_a_shift():
    p = exact.probabilities("target_spread", 1.0)
    rng = np.random.default_rng(1)
    draws = [stats.multinomial_test(rng.multinomial(400, p), p, seed=i, draws=2000).p_value for i in range(200)]
    assert np.mean(np.array(draws) < 0.05) <= 0.09  # size: about 5% of lossless samples rejected at 0.05
    shifted = stats.multinomial_test([250, 150, 0], p, seed=0)  # 0.625 where 0.700 is exact
    assert shifted.p_value < 0.002
    assert stats.multinomial_test([280, 120, 0], p, seed=0).p_value > 0.5  # exactly as expected
    assert stats.multinomial_test([280, 119, 1], p).p_value < 1e-3  # a word of probability 1.6e-7
    assert stats.multinomial_test([1, 1], [1.0, 0.0]).p_value == 0.0
    with pytest.raises(ValueError):
        stats.multinomial_test([1, 2], [0.5, 0.6])


def test_bonferroni_and_the_detectable_shift():
    assert stats.joint_level(0.01, 4) == 0.0025
    d = stats.detectable_shift(0.7, 500, 0.01)
    assert 0.06 < d < 0.08  # (2.576 + 0.842) * sqrt(0.21 / 500) = 0.070
    assert stats.detectable_shift(0.7, 2000, 0.01) == pytest.approx(d / 2)
    assert stats.detectable_shift(0.99997, 1000, 0.01) is None  # too few of the rare outcome for the approximation


def test_the_exact_distributions_are_the_tiny_targets():
    for t in (0.6, 1.0):
        full = spread.probabilities(spread.TARGET_GAP, t)
        s, second, other = exact.probabilities("target_spread", t)
        assert s == pytest.approx(full[successor(100)]) and second == pytest.approx(full[spread.alternative(100)])
        assert math.isclose(s + second + other, 1.0)
    assert exact.probabilities("target_spread", 1.0)[0] == pytest.approx(0.7, abs=1e-6)
    assert exact.probabilities("target", 1.0)[0] > 0.9999
    a = 100
    b = successor(a)
    c = spread.alternative(b)
    assert exact.counts([[a, b, c, 7]]) == [1, 1, 1]  # the first token follows the prompt: left out
    with pytest.raises(ValueError):
        exact.probabilities("target", 0.0)


def test_greedy_verdicts_weigh_the_engines_own_divergence_and_the_gap():
    same = [[1, 2, 3], [4, 5, 6]]
    gaps = [[0.01, 3.0, 3.0], [3.0, 3.0, 3.0]]
    s = Settings(wide_gap=0.5)
    ok = check.greedy(same, same, same, gaps, s, 0.01)
    assert (ok.verdict, ok.diverged, ok.p_value) == (check.PASS, [], 1.0)
    near_tie = check.greedy([[9, 2, 3], [4, 5, 6]], same, [[9, 2, 3], [4, 5, 6]], gaps, s, 0.01)
    assert near_tie.verdict == check.PASS and near_tie.diverged[0] == check.Divergence(0, 0, 0.01)
    wide = check.greedy([[1, 9, 3], [4, 5, 6]], same, same, gaps, s, 0.01)
    assert wide.verdict == check.LOSSY and wide.wide == [check.Divergence(0, 1, 3.0)]


def test_a_sampled_run_is_judged_against_the_exact_distribution():
    rng = np.random.default_rng(3)
    p = exact.probabilities("target_spread", 0.8)

    def chain(probs, n):
        ids = [100]
        for _ in range(n):
            k = rng.choice(3, p=probs)
            prev = ids[-1]
            ids.append(successor(prev) if k == 0 else spread.alternative(prev) if k == 1 else successor(prev) + 7)
        return ids

    good = check.exact_test("target_spread", Settings(), 0.8, [chain(p, 32) for _ in range(16)], 0.005, seed=0)
    assert good.verdict == check.PASS and sum(good.counts) == 16 * 32
    bad = check.exact_test("target_spread", Settings(), 0.8, [chain([0.9, 0.1, 0.0], 32) for _ in range(16)], 0.005, seed=0)
    assert bad.verdict == check.LOSSY and bad.p_value < 0.005


def test_the_tests_are_counted_for_the_joint_level():
    assert check.tests_of(Settings(temperatures=(0.0, 0.6, 1.0)), "target_spread") == 5  # context + exact each
    assert check.tests_of(Settings(temperatures=(0.0, 1.0)), None) == 2


@pytest.mark.parametrize("values, problem", [
    ([0, -1], "-1 is no temperature"), ([float("nan")], "nan is no temperature"), ([0.5, 0.5], "given twice"),
    ([], "give a list"), ("hot", "give a list"), ([True], "True is no temperature")])
def test_temperature_lists_are_checked(values, problem):
    found = temperature_problems(values, "temperatures")
    assert len(found) == 1 and problem in found[0], found


def test_a_word_the_target_never_says_is_lossy_and_the_record_stays_json():
    from llama4spec.tiny.words import successor as succ

    a = 100
    seen = check.exact_test("target", Settings(), 0.01, [[a, succ(a), 7]], 0.01, seed=0)  # 7 has probability 0 at T = 0.01
    assert seen.verdict == check.LOSSY and seen.p_value == 0.0 and seen.statistic is None
    import json

    json.dumps(check.as_dict(seen), allow_nan=False)
