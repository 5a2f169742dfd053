"""analysis.regress: the change of each metric of a point between two runs, its 95% interval with the
between-start term on the timed figures, verdicts by Holm over the table, and the gate."""

from __future__ import annotations

import pytest

from llama4spec.analysis.regress import (IMPROVED, NO_CHANGE, NOT_TESTED, REGRESSED, Runs, compare_points, gate)
from llama4spec.stats.noise import prior as known_noise


def _runs(centre: float, spread: float = 0.01) -> Runs:
    """Three runs around ``centre``, ``spread`` apart (relative)."""
    return Runs(tuple(centre * (1 + spread * d) for d in (-1, 0, 1)))


NOISE = known_noise(0.13, 0.0, 'test')


def _one(metrics: dict[str, tuple[Runs, Runs]], between_sd: float = 0.13):
    (point,) = compare_points({("p", "p"): metrics}, noise=known_noise(between_sd, 0.0, 'test'))
    return {c.metric.key: c for c in point.changes}, point


def test_nothing_changed_is_no_significant_change() -> None:
    changes, point = _one({"output_throughput": (_runs(100.0), _runs(101.0)),
                           "mean_tpot_ms": (_runs(10.0), _runs(9.9))})
    assert point.verdict == NO_CHANGE
    c = changes["output_throughput"]
    assert c.ratio == pytest.approx(1.01, rel=1e-3) and c.low < 1 < c.high


def test_a_halved_throughput_regresses_and_a_doubled_tpot_too() -> None:
    changes, point = _one({"output_throughput": (_runs(100.0), _runs(50.0)),
                           "mean_tpot_ms": (_runs(10.0), _runs(20.0)), "mean_ttft_ms": (_runs(20.0), _runs(10.0))})
    assert point.verdict == REGRESSED
    assert changes["output_throughput"].verdict == REGRESSED and changes["mean_tpot_ms"].verdict == REGRESSED
    assert changes["mean_ttft_ms"].verdict == IMPROVED  # lower TTFT is better
    assert changes["output_throughput"].change_pct == pytest.approx(-50.0, abs=0.1)
    loss = changes["output_throughput"].loss_pct
    assert 0 < loss < 50  # at least this much slower, with confidence: less than the point estimate
    assert gate([point], loss - 1) and not gate([point], loss + 1)


def test_two_runs_are_two_server_starts_a_small_change_is_not_declared() -> None:
    """A 15% drop with almost no spread inside each run: the between-start term (two separate runs
    differ even when nothing changed) keeps it undeclared; without the term it would be declared."""
    metrics = {"output_throughput": (_runs(100.0, 0.001), _runs(85.0, 0.001))}
    assert _one(metrics)[1].verdict == NO_CHANGE
    assert _one(metrics, between_sd=0.0)[1].verdict == REGRESSED


def test_acceptance_is_counted_not_timed_and_carries_no_between_start_term() -> None:
    changes, _ = _one({"acceptance_length": (_runs(3.0, 0.001), _runs(2.7, 0.001))})
    assert changes["acceptance_length"].verdict == REGRESSED


def test_one_run_a_side_is_not_tested() -> None:
    changes, point = _one({"output_throughput": (Runs((100.0,)), Runs((10.0,)))})
    assert point.verdict == NOT_TESTED and changes["output_throughput"].low is None
    assert changes["output_throughput"].ratio == pytest.approx(0.1)
    assert gate([point], 0) == []


def test_verdicts_are_controlled_over_the_whole_table() -> None:
    """A change just outside one comparison's 95% interval is not declared among many comparisons
    (Holm over the table), while it is when it is the only one."""
    alone = {("p", "p"): {"output_throughput": (_runs(100.0, 0.001), _runs(62.0, 0.001))}}
    (point,) = compare_points(alone, noise=NOISE)
    c = point.changes[0]
    assert c.high < 1.0 and c.verdict == REGRESSED
    many = dict(alone)
    for i in range(40):
        many[(f"q{i}", f"q{i}")] = {"output_throughput": (_runs(100.0), _runs(100.0))}
    first = compare_points(many, noise=NOISE)[0].changes[0]
    assert first.high < 1.0 and first.verdict == NO_CHANGE


def test_metrics_measured_in_neither_run_are_left_out() -> None:
    changes, _ = _one({"output_throughput": (_runs(100.0), _runs(100.0)), "acceptance_length": (Runs(()), Runs(()))})
    assert list(changes) == ["output_throughput"]
