"""The blocks design stopped at the budget (sweep.budget_stop): whether one more block would
likely settle an open comparison, what the stop says, and the budget held against a run's status.
No engine: a plan's shape stands in for a planned sweep."""

from __future__ import annotations

import math
from types import SimpleNamespace as NS

import numpy as np

from llama4spec.stats.noise import prior
from llama4spec.stats.compare import compare
from llama4spec.cost.budget import parse_budget
from llama4spec.sweep.budget_stop import STOPPED, budget_stop, likely_settled, said, stop_note

NOISE = prior(0.02, 0.04, "test")


def _blocks(ratio: float, blocks: int, spread: float = 0.02, seed: int = 0) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    means = math.log(ratio) + spread * rng.standard_normal(blocks)
    return [list(np.exp(m + 0.001 * rng.standard_normal(3))) for m in means]


def _comparison(ratio: float, blocks: int, rule=(3, 5)):
    b = _blocks(ratio, blocks)
    cand = [x for block in b for x in block]
    comps = compare({"k3": cand, "none": [1.0] * len(cand)}, 0.95, NOISE, blocks={("k3", "none"): b},
                    block_rule=rule)
    return comps[("k3", "none")]


def test_a_clear_effect_one_look_before_the_last_is_likely_settled():
    c = _comparison(1.04, 4)
    assert not c.decided  # the early look keeps almost no alpha
    assert likely_settled(c, 4, (3, 5, 0.95))


def test_no_effect_or_no_room_is_not_likely_settled():
    assert not likely_settled(_comparison(1.0, 4), 4, (3, 5, 0.95))
    assert not likely_settled(_comparison(1.10, 5), 5, (3, 5, 0.95))  # max_blocks reached
    assert not likely_settled(NS(interval=None, level=None), 4, (3, 5, 0.95))


def _analysis(decided: bool, comparison):
    pick = NS(decided=decided, sentence=lambda: "k=3, decided: faster than no speculation" if decided
              else "k=3, the highest median, undecided against no speculation")
    row = NS(comparison=comparison, point=NS(name="tiny_eagle k=3"))
    return NS(at=[NS(title="concurrency 4", pick=pick, rows=[row])])


def test_what_the_stop_says():
    open_ = said(_analysis(False, _comparison(1.04, 4)), 4, (3, 5, 0.95))
    assert "decided: nothing" in open_ and "undecided: concurrency 4: k=3" in open_
    assert "would likely settle tiny_eagle k=3 against no speculation at concurrency 4" in open_
    done = said(_analysis(True, _comparison(1.0, 4)), 4, (3, 5, 0.95))
    assert "decided: concurrency 4: k=3, decided" in done and "undecided: nothing" in done
    assert "none of the open questions" in done


def _plan(step_budget=None, runbook_budget=None):
    def step(sid, kind="bench", beside=None, part_of="sweep"):
        return NS(id=sid, composed=None, step=NS(part_of=part_of, keys=NS(beside=beside), budget=None,
                                                 traits=NS(serves=kind == "serve")))
    steps = [step("sweep", "sweep", part_of=None), step("base-b1", "serve"), step("k3-b1", "serve", beside="base-b1"),
             step("k3-b1-c4"), step("base-b2", "serve"), step("k3-b2", "serve", beside="base-b2"),
             step("other", part_of=None)]
    steps[0].step.budget = step_budget
    return NS(steps=steps, get=lambda sid: next(q for q in steps if q.id == sid), pricing=None,
              runbook=NS(budget=runbook_budget))


STATUS = {"steps": [{"id": "base-b1", "status": "done", "seconds": 60}, {"id": "k3-b1", "status": "done", "seconds": 1},
                    {"id": "k3-b1-c4", "status": "done", "seconds": 139}, {"id": "other", "status": "done", "seconds": 500}]}


def test_the_next_block_against_the_steps_budget_and_the_runbooks():
    p = NS(composed=None)
    # one block took 200 s: a third would need 400 s
    assert budget_stop(_plan(parse_budget("400 s", "x")), "sweep", p, STATUS) is None
    found = budget_stop(_plan(parse_budget("399 s", "x")), "sweep", p, STATUS)
    assert found is not None and found.whose == "the step's" and found.spent == 200 and found.next == 200
    # the runbook's counts every step: 700 s spent
    assert budget_stop(_plan(None, parse_budget("14 min", "x")), "sweep", p, STATUS) is not None
    assert budget_stop(_plan(None, parse_budget("15 min", "x")), "sweep", p, STATUS) is None
    assert budget_stop(_plan(), "sweep", p, None) is None


def test_the_stop_read_back_from_the_skipped_steps():
    reason = f"skipped: not started: {STOPPED}: the step's budget 10 min would be exceeded"
    assert stop_note({"a": "skipped: decided", "b": reason}) == "the step's budget 10 min would be exceeded"
    assert stop_note({"a": "failed: exit 1"}) is None and stop_note(None) is None
