"""Deriving a lookahead schedule from fixed-lookahead sweep results (pure)."""

from __future__ import annotations

from llama4spec.config.schedule import schedule_problems
from llama4spec.sweep.model import Point, analyse
from llama4spec.sweep.schedule import derive


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


def test_no_speculation_anywhere_means_draft_none() -> None:
    s = derive(analyse(_points({1: {None: 200, 1: 150}, 8: {None: 900, 1: 500}})), "eagle")
    assert s.ranges == [[1, 8, 0]] and not s.speculates and s.override() == "draft=none"


def test_no_point_for_the_draft_derives_nothing() -> None:
    assert derive(analyse(_points({1: {None: 100}})), "eagle") is None
