"""cost.stop: what a run's steps spent, and whether one more unit fits a budget. Pure."""

from __future__ import annotations

from llama4spec.cost.budget import parse_budget
from llama4spec.cost.stop import over, spent_by

ENTRIES = [
    {"id": "a", "status": "done", "seconds": 100.0},
    {"id": "b", "status": "done", "seconds": 50.0},
    {"id": "c", "status": "skipped"},
    {"id": "other", "status": "done", "seconds": 1000.0},
    {"id": "d", "status": "done", "seconds": -3},  # not a duration: not counted
]


def test_spent_counts_the_named_steps_their_devices_and_units():
    s = spent_by(ENTRIES, {"a", "b", "c", "d"}, {"a": 8, "b": 4}, {"a", "c"})
    assert s.wall_s == 150.0
    assert s.device_s == 100 * 8 + 50 * 4
    assert s.units == 1  # c is in a unit but was skipped
    assert s.per_unit() == (150.0, 1000.0)
    assert spent_by(ENTRIES, {"b"}, {}, set()).per_unit() is None


def test_one_more_unit_against_a_wall_budget():
    budget = parse_budget("10 min", "x")
    assert over(budget, 400.0, 0.0, (150.0, 0.0), "the step's") is None  # 550 s fits 600 s
    found = over(budget, 500.0, 0.0, (150.0, 0.0), "the step's")
    assert found is not None and found.spent == 500.0 and found.next == 150.0
    assert found.text().startswith("the step's budget 10 min would be exceeded by one more block")
    assert over(None, 1e9, 1e9, (1.0, 1.0), "the step's") is None


def test_one_more_unit_against_gpu_hours():
    budget = parse_budget("2 gpu-h", "x")
    # 1.5 device-hours spent, a unit holds 8 devices for 5 min (0.67 device-hours): over
    assert over(budget, 0.0, 1.5 * 3600, (300.0, 300.0 * 8), "the runbook's") is not None
    assert over(budget, 0.0, 1.0 * 3600, (300.0, 300.0 * 8), "the runbook's") is None
