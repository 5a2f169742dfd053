"""The error-control core of sequential sweeps (pure, seeded, deterministic).

Hand-computed Welch and Holm cases; the allocation's states and next runs on small
inputs; simulated sweeps that run the module's own allocation (``replay``, vectorised across
sweeps) for the error rate and the power; the dominance bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from llama4spec.stats.noise import prior as known_noise
from llama4spec.stats.lookahead_bound import cannot_win, speedup_bound
from llama4spec.stats.looks import EARLY_LOOKS_ALPHA, holm, look_weights
from llama4spec.stats.ratio import welch_ratio
from llama4spec.stats.sequential import STATES, allocate, replay
from llama4spec.stats.statistic import LogRatio

T_975_2 = 4.302653  # Student-t 97.5% quantile, 2 degrees of freedom (table value)
T_975_4 = 2.776445  # 4 degrees of freedom
Z_975 = 1.959964  # normal 97.5% quantile

# The two-component noise model of the simulated sweeps, on log throughput: every run of a point
# shares its server start's effect, fitted to the spreads measured on this
# machine (benchmarks/spreads.py): within one server start, and between starts of one setting.
WITHIN_SD = 0.17  # measured here by benchmarks/spreads.py (pooled within-start log-sd 0.165, under load)
BETWEEN_SD = 0.13  # and between starts (0.133): the CPU hardware prior
SWEEPS = 10_000
POINTS = 5  # no speculation and four lookaheads (the tiny sweeps' k 1, 2, 3, 5)
ALPHA = 0.05


def _simulate(ratios: list[float], sweeps: int, seed: int, runs: int = 10) -> np.ndarray:
    """Throughputs [sweeps, points, runs]: true ratio x start effect x run noise (log-normal)."""
    rng = np.random.default_rng(seed)
    start = rng.normal(0.0, BETWEEN_SD, (sweeps, len(ratios), 1))
    within = rng.normal(0.0, WITHIN_SD, (sweeps, len(ratios), runs))
    return 100.0 * np.exp(np.log(np.asarray(ratios))[None, :, None] + start + within)


# -- intervals ------------------------------------------------------------------------------------

def test_welch_equal_spreads_has_2n_minus_2_degrees_of_freedom() -> None:
    # logs 1, 2, 3 against 0, 1, 2: difference 1, variances 1 and 1, se sqrt(2/3), df 4
    iv = welch_ratio(np.exp([1.0, 2.0, 3.0]), np.exp([0.0, 1.0, 2.0]))
    half = T_975_4 * math.sqrt(2 / 3)
    assert iv.df == pytest.approx(4.0)
    assert (iv.ratio, iv.low, iv.high) == pytest.approx((math.e, math.exp(1 - half), math.exp(1 + half)), rel=1e-6)
    assert iv.method == "welch" and iv.confidence == 0.95


def test_welch_unequal_counts_use_satterthwaite() -> None:
    # logs 0, 2 (var 2, n 2) against 0, 0, 1, 1 (var 1/3, n 4): se^2 = 1 + 1/12 = 13/12,
    # df = (13/12)^2 / (1^2/1 + (1/12)^2/3) = 507/433
    iv = welch_ratio(np.exp([0.0, 2.0]), np.exp([0.0, 0.0, 1.0, 1.0]))
    assert iv.df == pytest.approx(507 / 433)
    assert iv.ratio == pytest.approx(math.exp(0.5))
    assert math.log(iv.high) - 0.5 == pytest.approx(0.5 - math.log(iv.low))  # symmetric on the log scale


def test_the_between_start_term_is_added_as_known() -> None:
    # no spread within either start: only the between-start term, normal quantile (df infinite)
    iv = welch_ratio([math.e, math.e], [1.0, 1.0], noise=known_noise(0.5, 0.0, 'test'))
    half = Z_975 * math.sqrt(2 * 0.25)
    assert iv.df == math.inf
    assert (iv.low, iv.high) == pytest.approx((math.exp(1 - half), math.exp(1 + half)), rel=1e-6)


def test_intervals_refuse_too_few_or_unusable_runs() -> None:
    for a, b in (([1.0], [1.0, 2.0]), ([1.0, -2.0], [1.0, 2.0]), ([1.0, math.nan], [1.0, 2.0])):
        with pytest.raises(ValueError):
            welch_ratio(a, b)


# -- Holm and the looks ---------------------------------------------------------------------------

def test_holm_steps_down_and_stops_at_the_first_failure() -> None:
    # sorted 0.005 <= 0.05/4, 0.01 <= 0.05/3, 0.03 > 0.05/2: stop
    assert holm([0.01, 0.04, 0.03, 0.005], 0.05).tolist() == [True, False, False, True]
    # 0.01 <= 0.05/3, 0.02 <= 0.05/2, 0.04 <= 0.05: all (Bonferroni, 0.05/3, would take one)
    assert holm([0.01, 0.02, 0.04], 0.05).tolist() == [True, True, True]
    # 0.03 > 0.05/2 stops it: 0.04 stays, though below 0.05
    assert holm([0.01, 0.03, 0.04], 0.05).tolist() == [True, False, False]
    # rows are independent families; NaN counts as 1
    assert holm([[0.001, math.nan], [0.5, 0.01]], 0.05).tolist() == [[True, False], [False, True]]


def test_look_weights_keep_almost_all_alpha_for_the_last_look() -> None:
    w = look_weights(2, 10)
    assert len(w) == 9 and w.sum() == pytest.approx(1.0)
    assert w[-1] == pytest.approx(1 - EARLY_LOOKS_ALPHA) and w[:-1] == pytest.approx([EARLY_LOOKS_ALPHA / 8] * 8)
    assert look_weights(10, 10).tolist() == [1.0]


# -- the allocation on small inputs ---------------------------------------------------------------

STAT = LogRatio(known_noise(BETWEEN_SD, 0.0, 'test'))


def test_points_below_min_repeats_get_the_next_runs_first() -> None:
    a = allocate({"none": [100.0, 101.0], "k1": [150.0], "k2": []}, "none", statistic=STAT)
    assert a.next == "k2"
    assert all(p.state == "open" and p.verdict in (None, "undecided") for p in a.points.values())


def test_a_clear_winner_is_decided_at_the_first_look() -> None:
    a = allocate({"none": [100.0, 101.0], "k3": [400.0, 404.0], "k1": [30.0, 30.3]}, "none", statistic=STAT)
    k3, k1, none = a.points["k3"], a.points["k1"], a.points["none"]
    assert a.leader == "k3" and a.next is None
    assert (k3.state, k3.verdict, k3.runs) == ("resolved", "faster", 2)
    assert (k1.state, k1.verdict, k1.below) == ("eliminated", "slower", "k3")
    assert (none.state, none.below, none.verdict) == ("eliminated", "k3", None)
    assert k3.speedup.low > 1 and k3.speedup.ratio == pytest.approx(4.0, rel=0.01)
    assert k3.speedup.confidence > 0.95  # the level a decision at an early look needs


def test_equal_settings_stay_open_then_stop_at_max_repeats() -> None:
    runs = {"none": [100.0, 102.0, 101.0], "k1": [101.0, 100.0]}
    a = allocate(runs, "none", statistic=STAT)
    assert a.points["k1"].state == "open" and a.next == "k1"  # the run the open question needs
    assert a.points["k1"].speedup.low < 1 < a.points["k1"].speedup.high
    full = {"none": [100.0, 102.0] * 5, "k1": [101.0, 100.0] * 5}
    a = allocate(full, "none", statistic=STAT)
    assert [p.state for p in a.points.values()] == ["max_repeats", "max_repeats"] and a.next is None
    assert a.points["k1"].verdict == "undecided"


def test_allocation_input_problems_are_errors() -> None:
    ok = {"none": [1.0, 2.0], "k1": [1.0, 2.0]}
    for kwargs in ({"min_repeats": 1}, {"max_repeats": 101}, {"min_repeats": 5, "max_repeats": 4},
                   {"confidence": 1.0}, {"confidence": 0.5}):
        with pytest.raises(ValueError):
            allocate(ok, "none", **kwargs)
    for runs, baseline in ((ok, "k9"), ({"none": [1.0, 0.0]}, "none"), ({"none": [1.0] * 11}, "none")):
        with pytest.raises(ValueError):
            allocate(runs, baseline)


def test_allocate_one_run_at_a_time_is_replay() -> None:
    """The per-sweep API, asked for every run, makes the batch replay's decisions, and an open
    question's interval spans 1 (the decision level and the shown interval agree)."""
    runs = _simulate([1.0, 1.3, 1.6, 1.0], 12, seed=3)
    ids = ["none", "k1", "k2", "k3"]
    batch = replay(runs, 0, statistic=STAT)
    for s in range(len(runs)):
        got: dict[str, list[float]] = {pid: [] for pid in ids}
        while (a := allocate(got, "none", statistic=STAT)).next is not None:
            got[a.next].append(float(runs[s, ids.index(a.next), len(got[a.next])]))
            for p in a.points.values():
                if p.verdict == "undecided" and p.speedup is not None:
                    assert p.speedup.low <= 1 <= p.speedup.high
        assert [len(got[pid]) for pid in ids] == batch.counts[s].tolist()
        assert [STATES.index(p.state) for p in a.points.values()] == batch.decisions.state[s].tolist()
        assert all(2 <= len(xs) <= 10 for xs in got.values())


# -- simulated sweeps -----------------------------------------------------------------------------

def test_equal_settings_declare_a_difference_at_most_5_percent_of_the_time() -> None:
    """>= 10,000 sweeps of five equally fast settings, each one server start, measured by the
    allocation itself: any verdict or elimination at all is a false one."""
    sim = replay(_simulate([1.0] * POINTS, SWEEPS, seed=21), 0, statistic=STAT)
    rate = sim.ever_above.any(axis=(1, 2)).mean()
    mc_se = math.sqrt(ALPHA * (1 - ALPHA) / SWEEPS)
    print(f"\nfalse-declaration rate, {POINTS} equal settings, {SWEEPS} sweeps: {rate:.4f} "
          f"(bound {ALPHA} + 3 x {mc_se:.4f}); mean runs a point {sim.counts.mean():.2f}")
    assert rate <= ALPHA + 3 * mc_se
    assert (sim.ever_above == sim.decisions.above).all()  # a decision, once taken, stands
    assert ((sim.counts >= 2) & (sim.counts <= 10)).all()


def test_without_the_between_start_term_the_same_sweeps_are_mostly_false() -> None:
    """Why the statistic carries the between-start term: runs on one start cannot average it."""
    sim = replay(_simulate([1.0] * POINTS, 1000, seed=22), 0, statistic=LogRatio(None))
    assert sim.ever_above.any(axis=(1, 2)).mean() > 0.5


def test_sequential_power_is_no_lower_than_a_fixed_10_run_design() -> None:
    """At the ratio where a fixed design of 10 runs a side (no speculation against one lookahead)
    has 80% power to call the lookahead faster, the sequential rule, capped at 10 runs, has at
    least that power up to Monte-Carlo error, on fewer runs."""
    from scipy import special

    # the fixed design: Holm over the two one-sided hypotheses, one look at 10 runs a side; its
    # power at log ratio r is P(center + r >= c se), so r* is the 80% quantile of c se - center
    null = np.log(_simulate([1.0, 1.0], 200_000, seed=5))
    est = STAT.compare(null[:, 1], null[:, 0])
    ratio = math.exp(float(np.quantile(special.stdtrit(est.df, 1 - ALPHA / 2) * est.se - est.center, 0.80)))

    runs = _simulate([1.0, ratio], SWEEPS, seed=7)
    fixed = replay(runs, 0, min_repeats=10, max_repeats=10, statistic=STAT)
    seq = replay(runs, 0, statistic=STAT)
    p_fixed, p_seq = fixed.decisions.above[:, 1, 0].mean(), seq.decisions.above[:, 1, 0].mean()
    mc_se = math.sqrt(0.8 * 0.2 / SWEEPS)
    print(f"\nratio {ratio:.3f}: power fixed 10 runs {p_fixed:.4f} (computed 0.80), sequential {p_seq:.4f} "
          f"+- {mc_se:.4f}, on {seq.counts.sum(1).mean():.1f} runs against 20")
    assert abs(p_fixed - 0.80) <= 3 * mc_se  # the computed ratio is the module's fixed design's
    assert p_seq >= 0.80 - 3 * mc_se
    assert seq.counts.sum(1).mean() < fixed.counts.sum(1).mean()


# -- lookaheads that cannot win -------------------------------------------------------------------

def test_a_lookahead_below_the_leader_everywhere_is_pruned() -> None:
    # k=3 measured (upper bounds 1.10 and 1.05, acceptance at position 2 at most 0.10, E(3) at
    # least 1.8): k=5 reaches at most S_hi (1 + 2 x 0.10 / 1.8)
    bounds = {c: speedup_bound(3, 5, s, 0.10, 1.8) for c, s in ((1, 1.10), (4, 1.05))}
    assert bounds == pytest.approx({1: 1.10 * (1 + 0.2 / 1.8), 4: 1.05 * (1 + 0.2 / 1.8)})  # 1.222, 1.167
    assert cannot_win(bounds, {1: 1.40, 4: 1.30})
    assert not cannot_win(bounds, {1: 1.40, 4: 1.15})  # one concurrency where it may still win
    assert not cannot_win({1: bounds[1]}, {1: 1.40, 4: 1.30})  # a concurrency without a bound
    assert not cannot_win(bounds, {})


def _model(k: int, accept: float, cost: float) -> tuple[float, float, float]:
    """Speedup, acceptance rate of position k-1 and acceptance length of lookahead k when the
    position-i acceptance is accept^(i+1) and a step with k drafts costs 1 + cost k."""
    e = 1 + sum(accept ** (i + 1) for i in range(k))
    return e / (1 + cost * k), accept ** k, e


def test_a_lookahead_that_wins_is_kept_and_the_bound_holds() -> None:
    s2, a1, e2 = _model(2, 0.9, 0.05)  # 2.46x
    s5 = _model(5, 0.9, 0.05)[0]  # 3.75x: more lookahead wins here
    bound = speedup_bound(2, 5, s2 * 1.05, a1 * 1.05, e2 * 0.95)
    assert s5 > s2 and s5 <= bound
    assert not cannot_win({1: bound}, {1: s2 * 0.95})
    for accept in (0.3, 0.6, 0.9, 1.0):  # with exact inputs the bound is never below the truth
        for cost in (0.0, 0.05, 0.3):
            for k in (1, 2, 3):
                s, a, e = _model(k, accept, cost)
                for k_next in range(k + 1, 9):
                    assert _model(k_next, accept, cost)[0] <= speedup_bound(k, k_next, s, a, e) * (1 + 1e-12)
    with pytest.raises(ValueError):
        speedup_bound(3, 3, 1.0, 0.5, 2.0)


def test_a_lone_baseline_still_gets_min_repeats_runs() -> None:
    assert allocate({"none": [100.0]}, "none").next == "none"
    a = allocate({"none": [100.0, 101.0]}, "none")
    assert a.points["none"].state == "resolved" and a.next is None
