"""The price of a plan before it starts: counts per kind (sweep, capacity, lossless, breakeven), the
least never above the most, GPU-hours as devices x hours, the profile's rates against the hardware
estimate's, and the dry run's lines."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from llama4spec.cost.lines import cost_line
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.render import plan_text
from tests.helpers import REPO, scout_blocks_text

RUN_DIR = Path("runs/RUNBOOK/TIMESTAMP")
PROFILE = REPO / "tests" / "fixtures" / "noise" / "h100_scout_tp4.json"


def _plan(path: Path, *overrides: str):
    return plan_file(path, lambda name: RUN_DIR, list(overrides))


def _scout_with_profile(tmp_path: Path) -> Path:
    text = scout_blocks_text()
    path = tmp_path / "scout.yaml"
    path.write_text(text.replace("    repeats: auto\n", f"    repeats: auto\n    noise: {PROFILE}\n"))
    return path


def test_the_scout_sweep_on_the_fixture_profile_costs_10_to_50_blocks(tmp_path, gpu_build) -> None:
    cost = _plan(_scout_with_profile(tmp_path)).pricing.steps["sweep"]
    # 5 lookaheads x 2..10 blocks, each both servers started together (420 s) then 5 pairs at 4 concurrencies
    assert cost.starts == [20, 100] and cost.runs == [400, 2000]
    block = 420 + 4 * 5 * 2 * (75 + 2)  # each run of a pair after its 2 s pause (gap_s)
    assert cost.wall_s == pytest.approx([10 * block, 50 * block])
    assert cost.device_h == pytest.approx((8 * 10 * block / 3600, 8 * 50 * block / 3600))  # 8 devices held
    assert cost.unit_what == "block" and cost.unit_s == pytest.approx(block)
    assert "from profile" in cost_line(cost) and not cost.record()["estimate"]


def test_without_a_profile_the_hardware_estimate_is_said_to_be_one(tmp_path, gpu_build) -> None:
    cost = _plan(REPO / "runbooks" / "llama4_scout_eagle_sweep.yaml").pricing.steps["sweep"]
    # the shipped design: 6 settings started twice, 3 runs at 4 concurrencies a start (its comment: 4.4 h)
    assert cost.starts == [12, 12] and cost.runs == [144, 144]
    assert cost.wall_s == pytest.approx([12 * (420 + 4 * 3 * 75)] * 2) and cost.wall_s[0] / 3600 == pytest.approx(4.4)
    (tmp_path / "blocks.yaml").write_text(scout_blocks_text())
    blocks = _plan(tmp_path / "blocks.yaml").pricing.steps["sweep"]
    assert blocks.starts == [20, 100] and blocks.runs == [240, 1200]  # 3 pairs a block by default
    assert "hardware estimate h100_80gb, not calibrated" in cost_line(cost) and cost.record()["estimate"]


@pytest.mark.parametrize("name,starts,runs", [("tiny_cpu_capacity", [4, 4], [16, 73]),
                                              ("tiny_cpu_breakeven", [11, 11], [66, 66]),
                                              ("tiny_cpu_sweep", [3, 4], [12, 80]),
                                              ("tiny_cpu_eagle_vs_baseline", [2, 2], [2, 2])])
def test_counts_per_kind_and_least_below_most(name: str, starts: list[int], runs: list[int]) -> None:
    pricing = _plan(REPO / "runbooks" / f"{name}.yaml").pricing
    total = pricing.total
    assert total.starts == starts and total.runs == runs
    for cost in [total, *pricing.steps.values()]:
        for pair in (cost.starts, cost.runs, cost.wall_s, cost.device_s):
            assert 0 <= pair[0] <= pair[1]
        assert cost.device_h[1] == pytest.approx(cost.wall_s[1] / 3600)  # a CPU server counts as one device


def test_a_lossless_check_counts_two_engine_starts_and_not_its_generation() -> None:
    pricing = _plan(REPO / "runbooks" / "tiny_cpu_lossless.yaml").pricing
    cost = next(iter(pricing.steps.values()))
    assert cost.starts == [2, 2] and cost.runs == [0, 0] and cost.engines
    assert "engine starts" in cost_line(cost) and "not counted: generation" in cost_line(cost)


def test_gpu_hours_are_devices_times_hours(gpu_build) -> None:
    cost = _plan(REPO / "runbooks" / "llama4_scout_eagle_mtbench.yaml").pricing.total
    assert cost.device_h == pytest.approx((4 * cost.wall_s[0] / 3600, 4 * cost.wall_s[1] / 3600))  # TP 4


def test_the_dry_run_has_a_cost_line_per_step_and_one_for_the_runbook() -> None:
    console = Console(record=True, width=100, file=io.StringIO())
    plan_text(console, _plan(REPO / "runbooks" / "tiny_cpu_capacity.yaml"))
    lines = console.export_text().splitlines()
    assert sum(line.startswith("    cost: ") for line in lines) == 2
    total = [line for line in lines if line.startswith("cost of the runbook: ")]
    assert total == ["cost of the runbook: 4 server starts, 16-73 runs, 5.6-10 min wall, 0.09-0.17 GPU-hours "
                     "(hardware estimate cpu, not calibrated)"]


def test_plan_json_carries_the_cost_and_the_budgets(tmp_path) -> None:
    text = (REPO / "runbooks" / "tiny_cpu_capacity.yaml").read_text().replace("steps:\n", "budget: 2 h\nsteps:\n", 1)
    path = tmp_path / "rb.yaml"
    path.write_text(text)
    records = {r["id"]: r for r in _plan(path).to_record()}
    assert records["capacity"]["cost"]["starts"] == [3, 3]
    assert all(r["runbook_budget"] == {"text": "2 h", "unit": "wall", "seconds": 7200.0} for r in records.values())
