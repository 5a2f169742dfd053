"""benchmarks/capacity_vs_grid.py without an engine: the grid, its seeded interleaved order, the first
bracket it is centred on, the drift check of its two halves, and the grid's runs falling between
the search's (a run is a function of its rate here)."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest

from llama4spec.capacity import probing as cap
from tests.helpers import REPO

_SPEC = importlib.util.spec_from_file_location("benchmarks_capacity_vs_grid", REPO / "benchmarks" / "capacity_vs_grid.py")
cvg = sys.modules.setdefault("benchmarks_capacity_vs_grid", importlib.util.module_from_spec(_SPEC))
_SPEC.loader.exec_module(cvg)


def test_the_grid_spans_a_factor_4_at_the_precision() -> None:
    assert cvg.grid_size(0.1) == 16
    rates = cvg.grid_rates(30.0, 16)
    assert rates[0] == 15.0 and rates[-1] == pytest.approx(60.0, rel=1e-4)
    assert all(b / a <= 1.1 + 1e-3 for a, b in zip(rates, rates[1:]))
    assert cvg.grid_rates(10.0, 3) == [5.0, 10.0, 20.0]


def test_every_rate_is_run_early_and_late_in_a_seeded_order() -> None:
    rates = cvg.grid_rates(30.0, 16)
    order = cvg.grid_order(rates, 3, seed=0)
    assert order == cvg.grid_order(rates, 3, seed=0) and order != cvg.grid_order(rates, 3, seed=1)
    assert sorted(order) == sorted(rates * 3)
    assert set(order[:16]) == set(rates) == set(order[32:])  # each pass runs every rate once
    assert order[:16] != sorted(order[:16])  # not in rate order


def test_the_first_bracket_is_the_closest_holding_rate_below_a_failing_one() -> None:
    assert cvg.first_bracket([(8, 1.0), (16, 1.0)], 0.9) is None
    assert cvg.first_bracket([(8, 1.0), (16, 1.0), (32, 0.5)], 0.9) == pytest.approx(math.sqrt(16 * 32))
    assert cvg.first_bracket([(8, 0.5), (4, 1.0)], 0.9) == pytest.approx(math.sqrt(32))
    assert cvg.first_bracket([(8, 0.5), (16, 1.0)], 0.9) is None  # a failing rate below every holding one


def _curve(shift: float):
    def attainment(rate: float) -> float:
        return 1 / (1 + math.exp((math.log(rate) - math.log(30.0 * shift)) / 0.1))

    return attainment


def test_a_server_that_drifts_shows_in_the_drift_check_and_a_steady_one_does_not() -> None:
    rates = cvg.grid_rates(30.0, 16)
    order = cvg.grid_order(rates, 3, seed=0)
    steady = cvg.drift([(r, _curve(1.0)(r)) for r in order], 0.9)
    assert steady.change == pytest.approx(0.0, abs=1e-12) and steady.first == pytest.approx(steady.second)
    # capacity 10% lower in the second half of the grid's time
    drifted = cvg.drift([(r, _curve(1.0 if i < 24 else 0.9)(r)) for i, r in enumerate(order)], 0.9)
    assert drifted.high < 0 and drifted.second < drifted.first
    assert drifted.rates >= 3 and "second less first" in drifted.words()
    assert "too few" in cvg.drift([(20.0, 1.0), (40.0, 0.0)], 0.9).words()


def test_the_grid_runs_between_the_search_runs_once_it_brackets_and_the_rest_after() -> None:
    made: list[tuple[str, float]] = []

    def grid_run(rate: float, i: int) -> float:
        made.append(("grid", rate))
        return _curve(1.0)(rate)

    grid = cvg.Grid(grid_run, cap.Settings(start=8.0, target=0.9, precision=0.1), 5, 2, seed=3)
    for rate, attainment in [(8.0, 1.0), (16.0, 1.0), (32.0, 0.4), (22.6, 1.0), (26.9, 0.95), (29.3, 0.8)]:
        made.append(("search", rate))
        grid.after_search_run(rate, attainment)
    kinds = [k for k, _ in made]
    assert kinds == ["search"] * 3 + ["search", "grid"] * 3  # nothing before the bracket, then one after each
    assert grid.rates == cvg.grid_rates(math.sqrt(16 * 32), 5)
    means = grid.finish(center=99.0)  # the centre is the bracket's, already set
    assert len(grid.done) == 10 and sorted(means) == grid.rates
    assert [r for kind, r in made if kind == "grid"] == [r for r, _ in grid.done] == cvg.grid_order(grid.rates, 2, 3)


def test_a_search_that_never_brackets_gets_its_grid_afterwards_around_its_answer() -> None:
    grid = cvg.Grid(lambda rate, i: 1.0, cap.Settings(start=8.0, target=0.9), 3, 1, seed=0)
    for rate in (8.0, 16.0):
        grid.after_search_run(rate, 1.0)
    assert grid.queue is None and grid.done == []
    grid.finish(center=20.0)
    assert grid.rates == [10.0, 20.0, 40.0] and len(grid.done) == 3


def test_a_grid_that_held_at_its_top_rate_is_extended_up_until_a_rate_fails() -> None:
    """The tiny server without speculation on a slow day: the search's first run failed by chance, the
    grid centred on that bracket held at its top rate, so its boundary was its top, not a boundary."""
    grid = cvg.Grid(lambda rate, i: _curve(1.0)(rate), cap.Settings(start=8.0, target=0.9, precision=0.1), 5, 2,
                    seed=3, extensions=6)
    means = grid.finish(center=10.0)  # rates 5 to 20, all below the crossing near 24.1 req/s
    top, below = sorted(grid.rates)[-1], sorted(grid.rates)[-2]
    assert top == pytest.approx(20.0 * 2 ** 0.5, rel=1e-4) and means[top] < 0.9 <= means[below]
    assert len(grid.rates) == 6 and len(grid.done) == 12  # one rate added, its 2 runs
    low = cvg.Grid(lambda rate, i: _curve(1.0)(rate), cap.Settings(start=8.0, target=0.9, precision=0.1), 5, 2,
                   seed=3, extensions=1)
    low.finish(center=200.0)  # every rate fails; one rate added below, at most
    assert len(low.rates) == 6 and min(low.rates) < 100.0
