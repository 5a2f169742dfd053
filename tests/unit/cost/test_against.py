"""A whole run's wall time against its dry run's prediction (status.json's ``cost``, summary.md's
line): below the least, within the range, above the most, each said with the rates' source."""

from __future__ import annotations

import pytest

from llama4spec.cost.lines import against, duration
from llama4spec.cost.model import Cost, Rates
from llama4spec.records.status import StatusRecord
from llama4spec.runbook.rundir import summary_markdown

RATES = Rates(30.0, 10.0, "hardware estimate cpu, not calibrated", True)


def _cost(low: float, high: float) -> Cost:
    return Cost(starts=[2, 4], runs=[10, 40], wall_s=[low, high], sources=[RATES])


@pytest.mark.parametrize("measured,said", [
    (354.0, "16% below the least"),
    (600.0, "within the predicted range"),
    (2232.0, "20% above the most"),
])
def test_the_measured_wall_time_is_placed_against_the_predicted_range(measured: float, said: str) -> None:
    found = against(_cost(420.0, 1860.0), measured)
    assert found["predicted_wall_s"] == [420.0, 1860.0] and found["measured_wall_s"] == measured
    assert found["sentence"].endswith(said) and "(hardware estimate cpu, not calibrated)" in found["sentence"]
    assert found["sentence"].startswith(f"wall time {duration(measured)}; the dry run predicted 7.0-31 min")
    StatusRecord.model_validate({"runbook": "x", "cost": found})  # status.json's model takes it


def test_a_plan_that_predicts_no_time_says_nothing_and_summary_md_carries_the_line() -> None:
    assert against(Cost(), 12.0) is None
    found = against(_cost(420.0, 1860.0), 600.0)
    text = summary_markdown({"runbook": "x", "status": "done", "started": "now", "cost": found})
    assert found["sentence"] in text
    assert "wall time" not in summary_markdown({"runbook": "x", "status": "done", "started": "now"})
