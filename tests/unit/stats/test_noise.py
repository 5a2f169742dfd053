"""noise.py: the components, comparisons, equivalence, blocks, allocation and noise.json."""

import json
import math

import numpy as np
import pytest

from llama4spec.stats.blocks import block_estimate, block_interval, block_trend
from llama4spec.stats.checks import check_precision, margin_problem, precision_problem
from llama4spec.stats.components import combine, estimate
from llama4spec.stats.design import MAX_RUNS_PER_START, runs_per_block, runs_per_start, starts_for
from llama4spec.stats.equivalence import equivalent
from llama4spec.stats.interval import Interval
from llama4spec.stats.noise import FROM_DATA, Component, Noise, prior
from llama4spec.stats.profile import Fingerprint, Profile, profile_json, read_profile, write_profile
from llama4spec.stats.ratio import ratio_interval
from llama4spec.errors import UserError

FP = Fingerprint("0.32.0", "cpu", "Intel Xeon", "flags sha256:0123456789ab", "tiny", 1, 1)


def test_estimate_matches_the_anova_by_hand():
    starts = [[100, 110, 105], [90, 95], [120, 118, 125, 119]]
    noise = estimate({"a": starts})
    logs = [np.log(s) for s in starts]
    ssw = sum(((y - y.mean()) ** 2).sum() for y in logs)
    msw = ssw / (2 + 1 + 3)
    n = np.array([3, 2, 4.0])
    grand = np.concatenate(logs).mean()
    msb = sum(len(y) * (y.mean() - grand) ** 2 for y in logs) / 2
    n0 = (n.sum() - (n ** 2).sum() / n.sum()) / 2
    assert noise.within.var == pytest.approx(msw) and noise.within.df == 6
    assert noise.between.var == pytest.approx((msb - msw) / n0)
    assert noise.between.df == pytest.approx((msb - msw) ** 2 / (msb ** 2 / 2 + msw ** 2 / 6))
    assert noise.between.source == FROM_DATA


def test_between_is_clamped_at_zero_with_zero_df_and_one_start_estimates_within_only():
    noise = estimate({"a": [[100, 130, 80], [101, 129, 81]]})
    assert noise.between.var == 0 and noise.between.df == 0
    one = estimate({"a": [[100, 110, 105]], "b": [[50, 52]]})
    assert one.between.df == 0 and one.within.df == 3


def test_combine_pools_by_df_and_keeps_the_prior_where_data_has_none():
    known = prior(0.1, 0.2, "prior of conf/hardware/cpu.yaml", between_df=6, within_df=10)
    data = Noise(Component(0.0, 0.0, FROM_DATA), Component(0.04, 30, FROM_DATA))
    both = combine(known, data)
    assert both.between == known.between
    assert both.within.var == pytest.approx((10 * 0.04 + 30 * 0.04) / 40) and both.within.df == 40
    assert FROM_DATA in both.within.source and "prior of conf/hardware/cpu.yaml" in both.within.source


def test_ratio_interval_uses_the_noise_and_shrinks_with_starts():
    noise = prior(0.1, 0.05, "test", between_df=8, within_df=20)
    one = ratio_interval([110, 112, 108], [100, 101, 99], noise)
    spread = ratio_interval([110, 112, 108], [100, 101, 99], noise, starts_a=[0, 1, 2], starts_b=[0, 1, 2])
    assert one.ratio == pytest.approx(math.exp(np.log([110, 112, 108]).mean() - np.log([100, 101, 99]).mean()))
    assert spread.high - spread.low < one.high - one.low
    assert "0.100" in one.noise and "test" in one.noise


def test_equivalence_by_two_one_sided_tests():
    tight = Interval(1.0, 0.99, 1.01, 0.95, df=50, center=0.001, se=0.002)
    wide = Interval(1.0, 0.9, 1.1, 0.95, df=50, center=0.001, se=0.05)
    assert equivalent(tight).equivalent and not equivalent(wide).equivalent
    assert not equivalent(tight, margin=0.0).equivalent
    with pytest.raises(UserError, match="margin"):
        equivalent(tight, margin=-0.01)


def test_blocks_are_the_unit_with_three_or_more():
    blocks = [[1.10, 1.12, 1.08], [1.15, 1.14], [1.05, 1.07, 1.06]]
    iv = block_interval(blocks)
    means = [np.log(b).mean() for b in blocks]
    assert iv.df == 2 and iv.center == pytest.approx(np.mean(means))
    assert iv.se == pytest.approx(np.std(means, ddof=1) / math.sqrt(3))
    with pytest.raises(ValueError, match="paired"):
        block_interval(blocks[:2])
    noise = Noise(Component(0.01 ** 2, 10, "t"), Component(0.02, 10, "t"), Component(0.03 ** 2, 10, "t"))
    assert block_interval(blocks[:2], noise=noise).df > 0


def test_kalibera_jones_allocation():
    noise = prior(0.05, 0.15, "t")
    # ceil(sqrt(40 / 10 x 0.15^2 / 0.05^2)) = ceil(sqrt(36)) = 6
    assert runs_per_start(noise, 40, 10).runs == 6
    assert "40 s" in runs_per_start(noise, 40, 10).why
    flat = prior(0.0, 0.15, "t")
    assert runs_per_start(flat, 40, 10).runs == MAX_RUNS_PER_START
    paired = prior(0.02, 0.1, "t", paired_sd=0.07)
    # ceil(sqrt(80 / 9 x 0.07^2 / (2 x 0.02^2))) = ceil(7.38) = 8
    assert runs_per_block(paired, 80, 9).runs == 8
    design = starts_for(prior(0.02, 0.04, "t"), 0.05, 4)
    assert 2 <= design.starts < 10 and "+-5%" in design.why
    assert starts_for(prior(0.02, 0.04, "t"), 0.01, 4).starts > design.starts


@pytest.mark.parametrize("value", [0, -0.1, 1, 1.5, float("nan"), "0.1", True])
def test_precision_is_checked(value):
    assert precision_problem(value) is not None
    with pytest.raises(UserError, match="precision"):
        check_precision(value)


def test_margin_is_checked():
    assert margin_problem(0) is None and margin_problem(0.02) is None
    assert "margin" in margin_problem(-0.01)
    for bad in (1, 5.0, float("nan"), True, "0.02"):  # a margin is a fraction: +-100% or more says nothing
        assert "fraction from 0 to below 1" in margin_problem(bad)


def _profile(**noise):
    return Profile(prior(0.02, 0.04, "x", between_df=5, within_df=18, **noise), 40.0, 9.0, FP, "sequential", 6, 4)


def test_profile_round_trip(tmp_path):
    path = tmp_path / "noise.json"
    write_profile(path, _profile())
    back = read_profile(path, FP)
    assert back.noise.between.sd == pytest.approx(0.02) and back.noise.within.df == 18
    assert back.noise.between.source == f"profile {path}"
    assert back.start_s == 40 and back.fingerprint == FP
    data = json.loads(path.read_text())
    assert data["between"]["sd_interval"][0] < 0.02 < data["between"]["sd_interval"][1]


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["between"].update(sd=-0.1), "between.sd"),
    (lambda d: d["within"].update(sd=float("nan")), "within.sd"),
    (lambda d: d["fingerprint"].update(vllm_version="0.31.0"), "vllm version '0.31.0'"),
    (lambda d: d["fingerprint"].update(device="NVIDIA H100"), "device 'NVIDIA H100'"),
    (lambda d: d.pop("costs"), "'costs' is missing"),
])
def test_bad_profiles_are_one_line(tmp_path, edit, words):
    path = tmp_path / "noise.json"
    data = profile_json(_profile())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(UserError) as err:
        read_profile(path, FP)
    assert words in str(err.value) and "\n" not in str(err.value) and "calibrate" in str(err.value)


def test_truncated_profile(tmp_path):
    path = tmp_path / "noise.json"
    write_profile(path, _profile())
    path.write_text(path.read_text()[:50])
    with pytest.raises(UserError, match="cut short|not valid JSON"):
        read_profile(path, FP)


def test_a_trend_of_the_block_ratios_over_the_run_is_said_and_a_steady_one_is_not() -> None:
    """The third concurrency-4 run of runbooks/tiny_cpu_blocks.yaml on a machine that slowed down: the
    block ratios rose from about 1.0 to 1.2 over the run. A steady run's blocks, spread as much, say
    nothing; fewer than 4 blocks are never tested."""
    rising = [[1.00, 1.02], [0.99, 1.01], [1.06, 1.08], [1.12, 1.13], [1.18, 1.20], [1.24, 1.22]]
    *_, text = block_estimate(rising)
    assert text.startswith("6 blocks' own spread (5 df); the blocks' ratio trended over the run (+")
    assert "a block, p = " in text and "the speedup moved with the machine's state" in text
    steady = [rising[i] for i in (0, 4, 2, 5, 1, 3)]  # the same blocks, in an order with no trend
    assert block_estimate(steady)[3] == "6 blocks' own spread (5 df)"
    assert block_trend(np.log([1.0, 1.1, 1.2])) == ""  # 3 blocks: no test
    assert block_trend(np.zeros(5)) == ""
