"""Equivalence is a decision: two settings whose interval lies within +-margin are "equivalent"
(two one-sided tests at the Holm level), and among equivalent lookaheads the smaller is recommended."""

from __future__ import annotations

import dataclasses

import numpy as np

from llama4spec.stats.point import Point
from llama4spec.stats.speedup_model import analyse
from llama4spec.stats.noise import prior
from llama4spec.stats.compare import compare

QUIET = prior(0.002, 0.0, "test")  # a between-start sd of 0.2%, taken as known


def _runs(center: float, n: int = 8, sd: float = 0.002, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(center * np.exp(rng.normal(0.0, sd, n)))


def _point(pid: str, k: int | None, xs: list[float]) -> Point:
    return Point(id=pid, draft="eagle" if k else "none", lookahead=k, concurrency=1,
                 output_throughput=float(np.median(xs)), samples={"output_throughput": tuple(xs)})


def test_two_settings_within_the_margin_are_equivalent_and_a_wider_margin_is_needed_when_noisier() -> None:
    runs = {"k2": _runs(200.0, seed=1), "k3": _runs(201.0, seed=2)}
    c = compare(runs, noise=QUIET, margin=0.02)[("k2", "k3")]
    assert c.verdict == "equivalent" and c.decided and c.sentence() == "equivalent within +-2%"
    assert c.interval.low >= 1 / 1.02 and c.interval.high <= 1.02
    assert compare(runs, noise=QUIET)[("k2", "k3")].verdict == "undecided"  # no margin: no equivalence
    assert compare(runs, noise=prior(0.13, 0.0, "test"), margin=0.02)[("k2", "k3")].verdict == "undecided"
    assert compare({"a": _runs(100.0), "b": _runs(150.0, seed=3)}, noise=QUIET, margin=0.02)[("b", "a")].verdict == "faster"


def test_among_equivalent_lookaheads_the_smaller_is_recommended_and_says_why() -> None:
    points = [_point("none", None, _runs(100.0, seed=4)), _point("k2", 2, _runs(200.0, seed=5)),
              _point("k3", 3, _runs(200.4, seed=5))]
    (at,) = analyse(points, noise=QUIET, margin=0.02).at
    assert at.comparisons[("k2", "k3")].verdict == "equivalent"
    assert at.pick.point.id == "k2" and at.pick.decided
    assert "equivalent within +-2% to" in at.pick.sentence() and "the smaller lookahead is taken" in at.pick.sentence()
    (plain,) = analyse(points, noise=QUIET).at
    assert plain.pick.point.id == "k3" and not plain.pick.decided  # without a margin: the higher median, undecided
    assert dataclasses.replace(at.comparisons[("k3", "k2")]).verdict == "equivalent"  # mirrored the same
