"""benchmarks/design_cost.py, the pure parts: the assumed truth, block and start prices, which
candidates a further block goes to, what counts as an error, and one simulated sweep's bookkeeping.
No engine."""

from __future__ import annotations

import importlib.util
import sys
from types import SimpleNamespace as NS

import numpy as np
import pytest

from llama4spec.stats.noise import prior
from tests.helpers import REPO

_SPEC = importlib.util.spec_from_file_location("benchmarks_design_cost", REPO / "benchmarks" / "design_cost.py")
dc = sys.modules.setdefault("benchmarks_design_cost", importlib.util.module_from_spec(_SPEC))
_SPEC.loader.exec_module(dc)


def test_the_truth_is_the_speedup_model():
    truth = dc.true_speedups((0.5, 0.5), {1: 0.1}, (1, 2))
    assert truth[(1, 1)] == pytest.approx(1.5 / 1.1)
    assert truth[(2, 1)] == pytest.approx(2.0 / 1.2)
    assert dc.best_at(truth, 1) == 2
    slow = dc.true_speedups((0.1,), {64: 0.5}, (1,))
    assert dc.best_at(slow, 64) is None  # no lookahead beats no speculation


def test_a_pick_is_right_within_the_margin():
    truth = {(1, 4): 1.50, (2, 4): 1.52, (3, 4): 1.40}
    assert dc.acceptable(truth, 4, 2, 0.02) and dc.acceptable(truth, 4, 1, 0.02)
    assert not dc.acceptable(truth, 4, 3, 0.02) and not dc.acceptable(truth, 4, None, 0.02)


def test_prices():
    costs = dc.Costs(420.0, 75.0)
    assert costs.block_s(3, 4) == 420 + 4 * 3 * 2 * 75  # the 2,220 s block of the fixture
    assert costs.block_s(1, 2) == 420 + 2 * 2 * 75


def _comps(undecided: set[tuple[str, str]], low: float = 2.0):
    ids = ["none", "k1", "k2", "k3"]
    out = {}
    for a in ids:
        for b in ids:
            if a != b:
                open_ = (a, b) in undecided or (b, a) in undecided
                out[(a, b)] = NS(decided=not open_, interval=NS(low=low))
    return out


def test_which_candidates_a_further_block_goes_to():
    comps = _comps({("k3", "k2"), ("k1", "none")})
    ids = ["none", "k1", "k2", "k3"]
    rivals = dc.open_rivals(3, comps, ids, None)
    assert rivals == {"k2"}
    assert dc.wanted(3, 3, rivals, comps, "answer") and dc.wanted(2, 3, rivals, comps, "answer")
    assert not dc.wanted(1, 3, rivals, comps, "answer")
    assert dc.wanted(1, 3, rivals, comps, "verdict") and not dc.wanted(2, 3, rivals, comps, "verdict")
    # k2's bound (1.9) below the leader's lower bound against no speculation (2.0): not a rival
    assert dc.open_rivals(3, comps, ids, {1: 5.0, 2: 1.9, 3: 5.0}) == set()
    assert dc.open_rivals(3, comps, ids, {1: 5.0, 2: 2.1, 3: 5.0}) == {"k2"}


def test_an_error_is_a_wrong_decided_pick_or_a_false_verdict():
    truth = {(1, 1): 1.3, (2, 1): 1.6, (1, 4): 0.9, (2, 4): 0.8}
    right = dc.Outcome(1.0, {1: 2, 4: None}, {1: True, 4: True}, {(1, 1): "faster", (2, 1): "faster"})
    assert not any(dc.wrong(truth, right, c, 0.02) for c in (1, 4))
    bad_pick = dc.Outcome(1.0, {1: 1}, {1: True}, {})
    assert dc.wrong(truth, bad_pick, 1, 0.02)
    assert not dc.wrong(truth, dc.Outcome(1.0, {1: 1}, {1: False}, {}), 1, 0.02)  # undecided: no error
    bad_verdict = dc.Outcome(1.0, {4: None}, {4: False}, {(1, 4): "faster"})
    assert dc.wrong(truth, bad_verdict, 4, 0.02)


def test_a_simulated_sweep_spends_what_its_blocks_cost():
    truth = {(k, c): 2.0 if k == 2 else 1.2 for k in (1, 2) for c in dc.CONCURRENCIES}
    design = dc.Design("t", lookaheads=(1, 2), min_blocks=3, max_blocks=3)
    noise = prior(0.02, 0.04, "test")
    sweep = dc.Sweep(design, truth, (0.02, 0.04), noise, dc.Costs(420.0, 75.0), np.random.default_rng(0), 0.95)
    out = sweep.run()
    assert out.seconds == pytest.approx(3 * 2 * dc.Costs(420.0, 75.0).block_s(3, 4))
    assert set(out.picks.values()) == {2}  # 2.0x against 1.2x: the leader by far
    assert {v for v in out.verdicts.values()} <= {"faster", "undecided"}
    m = sweep.measured[1]
    assert len(m.blocks[1]) == 3 and len(m.runs["none"]) == 2 * 3 * 3
