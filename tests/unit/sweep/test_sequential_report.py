"""A sweep measured until decided is reported by the rule its runs were given by: the report's
verdicts are the sequential rule's (anytime p-values, Holm over the concurrency), not a one-look
test at the full level, which data gathered adaptively would make too liberal. No engine runs."""

from __future__ import annotations

import numpy as np
import pytest

from llama4spec.stats.sequential import allocate
from llama4spec.stats.statistic import LogRatio
BETWEEN_SD = 0.13
from llama4spec.stats.point import Point, sequential_rule
from llama4spec.stats.speedup_model import analyse_concurrency
from llama4spec.stats.compare import compare
from llama4spec.stats.noise import prior as known_noise


def _runs(seed: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    ratio = {"none": 1.0, "k1": 1.3, "k2": 1.8, "k3": 1.1}
    counts = {"none": 6, "k1": int(rng.integers(2, 9)), "k2": int(rng.integers(2, 9)), "k3": int(rng.integers(2, 9))}
    return {pid: list(100 * r * np.exp(rng.normal(0, 0.1, counts[pid]))) for pid, r in ratio.items()}


@pytest.mark.parametrize("seed", range(12))
def test_the_reports_verdicts_are_the_allocations(seed: int) -> None:
    runs = _runs(seed)
    alloc = allocate(runs, "none", 2, 8, 0.95, LogRatio(known_noise(BETWEEN_SD, 0.0, 'test')))
    found = compare(runs, 0.95, known_noise(BETWEEN_SD, 0.0, 'test'), sequential=(2, 8))
    for pid, state in alloc.points.items():
        if pid != "none":
            assert found[(pid, "none")].verdict == state.verdict, (pid, found[(pid, "none")], state)


def test_a_gap_one_look_decides_stays_undecided_under_the_sequential_rule() -> None:
    runs = {"none": [100.0, 104.0, 97.0], "k2": [170.0, 176.0, 165.0]}
    once, looked = compare(runs, 0.95, known_noise(BETWEEN_SD, 0.0, 'test'))[("k2", "none")], compare(runs, 0.95, known_noise(BETWEEN_SD, 0.0, 'test'), sequential=(2, 10))[("k2", "none")]
    assert once.verdict == "faster" and looked.verdict == "undecided"
    assert looked.interval.confidence > once.interval.confidence  # at the look's share of alpha
    assert looked.interval.low < 1 < looked.interval.high


def _point(pid: str, k: int | None, xs: list[float], rule) -> Point:
    return Point(id=pid, draft="tiny" if k else "none", lookahead=k, concurrency=1, output_throughput=float(np.median(xs)),
                 mean_tpot_ms=None, mean_ttft_ms=None, acceptance_length=None, rates=(), num_drafts=0,
                 accepted_per_pos=(), samples={"output_throughput": tuple(xs)}, rule=rule)


def test_a_concurrency_measured_by_one_rule_is_compared_by_it_a_mix_at_one_look() -> None:
    rule = (2, 10, 0.95)
    base, k2 = [100.0, 104.0, 97.0], [170.0, 176.0, 165.0]
    known = known_noise(BETWEEN_SD, 0.0, "test")
    auto = analyse_concurrency(1, [_point("none", None, base, rule), _point("k2", 2, k2, rule)], noise=known)
    fixed = analyse_concurrency(1, [_point("none", None, base, None), _point("k2", 2, k2, None)], noise=known)
    assert auto.comparisons[("k2", "none")].verdict == "undecided"
    assert fixed.comparisons[("k2", "none")].verdict == "faster"
    assert sequential_rule([_point("none", None, base, rule), _point("k2", 2, k2, None)]) is None
    assert sequential_rule([_point("none", None, base * 4, rule)]) is None  # 12 runs: beyond its looks
