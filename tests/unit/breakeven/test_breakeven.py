"""The break-even map (``breakeven.map_fit``) on synthetic runs whose true speedup curve is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llama4spec.breakeven.map_fit import NEVER, PAYS, Runs, build, crossing, monotone, ratio
from llama4spec.stats.noise import prior as known_noise

BASE = 100.0


def _runs(mean: float, c: int = 1, k: int | None = None, length: float | None = None, acc=(), n: int = 4,
          spread: float = 0.02, seed: int = 0, label: str = "") -> Runs:
    rng = np.random.default_rng(seed)
    logs = np.log(mean) + spread * rng.standard_normal(n)
    logs += np.log(mean) - logs.mean()  # the sample's geometric mean is exactly ``mean``
    return Runs(c, tuple(float(v) for v in np.exp(logs)), k, length, tuple(acc), label)


def _grid(speedup, k: int = 3, c: int = 1, lengths=(1.0, 2.0, 3.0, 4.0), **kw) -> list[Runs]:
    return [_runs(BASE * speedup(L), c, k, L, acc=(L, L), seed=i + 1, label=f"k{k}-L{L}", **kw)
            for i, L in enumerate(lengths)]


def test_monotone_pools_violators_and_leaves_ordered_data() -> None:
    assert monotone(np.array([1.0, 3.0, 2.0, 4.0]), np.ones(4)).tolist() == [1.0, 2.5, 2.5, 4.0]
    assert monotone(np.array([0.0, 1.0, 2.0]), np.ones(3)).tolist() == [0.0, 1.0, 2.0]
    assert monotone(np.array([2.0, 0.0]), np.array([3.0, 1.0])).tolist() == [1.5, 1.5]


def test_crossing_interpolates_and_says_when_it_does_not_cross() -> None:
    x = np.array([1.0, 2.0, 3.0])
    assert crossing(x, np.array([-0.2, 0.2, 0.4])) == pytest.approx(1.5)
    assert crossing(x, np.array([0.1, 0.2, 0.3])) == -math.inf
    assert crossing(x, np.array([-0.3, -0.2, -0.1])) == math.inf


def test_the_break_even_of_a_known_curve_is_found_with_an_interval_around_it() -> None:
    """Speedup 0.7 + 0.2 (L - 1): crosses 1 at L = 2.5; at L = 1 it costs 30%."""
    curve = build([_runs(BASE)], _grid(lambda L: 0.7 + 0.2 * (L - 1)), noise=known_noise(0.02, 0.0, 'test')).curves[0]
    be = curve.breakeven
    assert be.state == "crosses" and be.value == pytest.approx(2.5, abs=0.05)
    assert be.low < 2.5 < be.high and be.high - be.low < 1.0
    assert curve.k0_cost.value == pytest.approx(0.7, rel=1e-6) and curve.k0_cost.high < 1.0
    assert [p.set_length for p in curve.points] == [1.0, 2.0, 3.0, 4.0]


def test_a_larger_between_start_term_widens_the_interval() -> None:
    narrow = build([_runs(BASE)], _grid(lambda L: 0.7 + 0.2 * (L - 1)), noise=known_noise(0.02, 0.0, 'test')).curves[0].breakeven
    wide = build([_runs(BASE)], _grid(lambda L: 0.7 + 0.2 * (L - 1)), noise=known_noise(0.13, 0.0, 'test')).curves[0].breakeven
    assert (wide.high or 99) - (wide.low or 0) > narrow.high - narrow.low


def test_a_curve_above_1_everywhere_pays_and_one_below_never_does() -> None:
    pays = build([_runs(BASE)], _grid(lambda L: 1.3 + 0.1 * L), noise=known_noise(0.01, 0.0, 'test')).curves[0].breakeven
    never = build([_runs(BASE)], _grid(lambda L: 0.5 + 0.05 * L), noise=known_noise(0.01, 0.0, 'test')).curves[0].breakeven
    assert pays.state == PAYS and pays.value is None and pays.low is None
    assert never.state == NEVER and never.value is None and never.high is None


def test_a_real_draft_on_the_curve_agrees_and_one_far_off_does_not() -> None:
    curve_of = lambda L: 0.7 + 0.2 * (L - 1)  # noqa: E731
    on = _runs(BASE * curve_of(3.2), k=3, acc=(3.2, 3.2, 3.2), seed=9, label="real")
    off = _runs(BASE * curve_of(3.2) * 0.6, k=3, acc=(3.2, 3.2, 3.2), seed=9, label="slow")
    m = build([_runs(BASE)], _grid(curve_of), [on, off], noise=known_noise(0.02, 0.0, 'test'))
    good, bad = m.curves[0].placements
    assert good.agrees and good.limit == "pays" and good.predicted.value == pytest.approx(curve_of(3.2), rel=0.01)
    assert good.headroom.value == pytest.approx(0.7, abs=0.05) and good.headroom.low > 0
    assert not bad.agrees and bad.difference.high < 1.0


def test_what_limits_a_draft_below_break_even() -> None:
    low = _runs(BASE * 0.8, k=3, acc=(2.0, 2.0), label="weak")
    quality = build([_runs(BASE)], _grid(lambda L: 0.6 + 0.2 * (L - 1)), [low], noise=known_noise(0.02, 0.0, 'test'))
    assert quality.curves[0].placements[0].limit == "draft quality"
    engine = build([_runs(BASE)], _grid(lambda L: 0.5 + 0.05 * L), [_runs(BASE * 0.6, k=3, acc=(2.0, 2.0))],
                   noise=known_noise(0.02, 0.0, 'test'))
    place = engine.curves[0].placements[0]
    assert place.limit == "engine cost" and place.headroom.value is None


def test_points_are_grouped_by_lookahead_and_concurrency_and_gaps_are_noted() -> None:
    synth = [*_grid(lambda L: 0.9, k=1, lengths=(1.0, 2.0)), *_grid(lambda L: 0.8, k=3, c=4),
             *_grid(lambda L: 0.8, k=3, c=16)]
    m = build([_runs(BASE), _runs(BASE, c=4)], synth, noise=known_noise(0.05, 0.0, 'test'))
    assert [(c.lookahead, c.concurrency) for c in m.curves] == [(1, 1), (3, 4)]
    assert any("c=16" in note for note in m.notes)


def test_one_run_a_point_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        build([Runs(1, (100.0,))], _grid(lambda L: 1.0), noise=known_noise(0.13, 0.0, 'test'))


def test_the_same_runs_give_the_same_map() -> None:
    args = ([_runs(BASE)], _grid(lambda L: 0.7 + 0.2 * (L - 1)))
    assert build(*args, noise=known_noise(0.13, 0.0, 'test')) == build(*args, noise=known_noise(0.13, 0.0, 'test'))


def test_its_ratio_interval_is_the_sweeps() -> None:
    from llama4spec.stats.ratio import welch_ratio
    BETWEEN_SD = 0.13

    a, b = (101.0, 97.0, 104.0), (80.0, 85.0, 78.0, 83.0)
    ours, sweeps = ratio(a, b, 0.95, known_noise(BETWEEN_SD, 0.0, 'test')), welch_ratio(a, b, 0.95, known_noise(BETWEEN_SD, 0.0, 'test'))
    assert (ours.value, ours.low, ours.high) == pytest.approx((sweeps.ratio, sweeps.low, sweeps.high), rel=1e-9)
