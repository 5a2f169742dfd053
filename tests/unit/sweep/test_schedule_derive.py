"""Deriving a lookahead schedule from fixed-lookahead sweep results (pure)."""

from __future__ import annotations

from llama4spec.config.schedule import schedule_problems
from llama4spec.stats.point import Point
from llama4spec.stats.speedup_model import analyse
from llama4spec.sweep.schedule_fit import derive
from llama4spec.stats.noise import prior as known_noise


def _points(table: dict[int, dict[int | None, float]]) -> list[Point]:
    out = []
    for c, by_k in table.items():
        for k, tput in by_k.items():
            out.append(Point(f"k{k}-c{c}", "eagle" if k else "none", k, c, tput, acceptance_length=None))
    return out


def test_bands_split_between_measured_concurrencies_and_merge_equal_k() -> None:
    s = derive(analyse(_points({1: {None: 100, 1: 150, 3: 200}, 16: {None: 800, 1: 900, 3: 850},
                                64: {None: 2000, 1: 1900, 3: 1500}, 128: {None: 3000, 1: 2500, 3: 2000}})), "eagle")
    assert s.ranges == [[1, 4, 3], [5, 32, 1], [33, 128, 0]]
    assert s.lookahead == 3 and schedule_problems(s.ranges, s.lookahead) == []
    assert s.override() == "draft=eagle lookahead=3 draft.lookahead_schedule=[[1,4,3],[5,32,1],[33,128,0]]"
    assert s.bands[-1].concurrencies == [64, 128]


def test_a_single_concurrency_is_one_band() -> None:
    s = derive(analyse(_points({4: {None: 100, 2: 180, 3: 170}})), "eagle")
    assert s.ranges == [[1, 4, 2]]


def test_an_exact_tie_recommends_the_smaller_lookahead() -> None:
    s = derive(analyse(_points({1: {None: 100, 2: 160, 3: 160}})), "eagle")
    assert s.ranges == [[1, 1, 2]]


def test_single_samples_derive_from_the_highest_medians_marked_undecided() -> None:
    s = derive(analyse(_points({1: {None: 100, 1: 150, 3: 200}, 4: {None: 300, 1: 330, 3: 310}})), "eagle")
    assert s.ranges == [[1, 2, 3], [3, 4, 1]] and [b.undecided for b in s.bands] == [[1], [4]]


def _runs(c: int, table: dict[int | None, tuple[float, ...]]) -> list[Point]:
    return [Point(f"k{k}-c{c}" if k else f"none-c{c}", "eagle" if k else "none", k, c, sorted(xs)[1],
                  samples={"output_throughput": xs})
            for k, xs in table.items()]


def test_an_undecided_concurrency_keeps_speculation_when_its_median_is_higher() -> None:
    """At concurrency 1, k=3 is decided faster than k=1 and no speculation; at 16, k=1's median is
    above no speculation's but the runs are too spread to decide it. The schedule keeps k=1 there,
    marked undecided, instead of switching speculation off for batch sizes 5-16."""
    points = (_runs(1, {None: (100.0, 101.0, 99.0), 1: (150.0, 152.0, 148.0), 3: (300.0, 303.0, 297.0)})
              + _runs(16, {None: (800.0, 600.0, 1000.0), 1: (900.0, 700.0, 1150.0), 3: (500.0, 520.0, 480.0)}))
    a = analyse(points, noise=known_noise(0.10, 0.0, 'test'))
    assert [x.choices["eagle"].decided for x in a.at] == [True, False]
    assert a.at[1].comparisons[("k1-c16", "none-c16")].verdict == "undecided"
    s = derive(a, "eagle")
    assert s.ranges == [[1, 4, 3], [5, 16, 1]] and [b.undecided for b in s.bands] == [[], [16]]
    assert s.from_points == ["k3-c1", "k1-c16"]


def test_no_speculation_anywhere_means_draft_none() -> None:
    s = derive(analyse(_points({1: {None: 200, 1: 150}, 8: {None: 900, 1: 500}})), "eagle")
    assert s.ranges == [[1, 8, 0]] and not s.speculates and s.override() == "draft=none"


def test_no_point_for_the_draft_derives_nothing() -> None:
    assert derive(analyse(_points({1: {None: 100}})), "eagle") is None
