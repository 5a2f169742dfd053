"""A budget: parsed once, every bad one a line and exit 2, checked against the least before anything starts."""

from __future__ import annotations

import json
import math

import pytest

from llama4spec.cost.budget import GPU, WALL, parse_budget
from llama4spec.errors import UserError


@pytest.mark.parametrize("text,amount,unit", [("10 min", 600, WALL), ("2 h", 7200, WALL), ("2h", 7200, WALL),
                                              ("90 s", 90, WALL), ("50 gpu-h", 50, GPU), ("1.5 GPU hours", 1.5, GPU)])
def test_a_budget_is_wall_time_or_gpu_hours(text: str, amount: float, unit: str) -> None:
    budget = parse_budget(text, "budget")
    assert math.isclose(budget.amount, amount) and budget.unit == unit


@pytest.mark.parametrize("text,said", [("0 h", "above 0"), ("-3 h", "above 0"), ("nan h", "finite"),
                                       ("inf gpu-h", "finite"), ("5 parsecs", "neither a time"),
                                       ("5", "no unit"), ("abc", "does not start with a number")])
def test_a_bad_budget_is_one_line(text: str, said: str) -> None:
    with pytest.raises(UserError) as err:
        parse_budget(text, "budget")
    assert len(err.value.problems) == 1 and said in err.value.problems[0]


@pytest.mark.parametrize("flag,said", [("--budget=0h", "above 0"), ("--budget=-1 h", "above 0"),
                                       ("--budget=nan h", "finite"), ("--budget=3 furlongs", "neither a time"),
                                       ("--budget=1 min", "below one server start"),
                                       ("--budget=5 min", "does not fit the least")])
def test_run_refuses_a_bad_or_short_budget_in_one_line(cli, flag: str, said: str) -> None:
    result = cli("run", "tiny_cpu_capacity", "--dry-run", flag)
    assert result.returncode == 2 and said in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_below_one_server_start_names_the_smallest_that_fits(cli) -> None:
    result = cli("run", "tiny_cpu_capacity", "--dry-run", "--budget=1 min")
    assert "the smallest budget that fits one is 1.4 min" in result.stderr


def test_a_runbook_too_big_for_its_budget_says_what_to_drop(cli) -> None:
    result = cli("run", "tiny_cpu_capacity", "--dry-run", "--budget=5 min")
    assert "drop a step ('capacity' 4.2 min, 'baseline' 1.3 min)" in result.stderr
    assert "at least 5.6 min" in result.stderr


def test_a_budget_key_on_a_step_and_on_the_runbook(cli, tmp_path) -> None:
    from tests.helpers import REPO

    text = (REPO / "runbooks" / "tiny_cpu_capacity.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("steps:\n", "budget: 0 min\nsteps:\n", 1))
    result = cli("run", str(bad), "--dry-run")
    assert result.returncode == 2 and "budget '0 min' must be a finite amount above 0" in result.stderr
    ok = tmp_path / "ok.yaml"
    ok.write_text(text.replace("  - id: capacity\n", "  - id: capacity\n    budget: 1 h\n"))
    result = cli("run", str(ok), "--dry-run")
    assert result.returncode == 0 and "    budget: 1 h of wall time; even the most (9.0 min) fits" in result.stdout


def test_the_dry_run_json_carries_the_cost_and_the_budget(cli) -> None:
    result = cli("run", "tiny_cpu_capacity", "--dry-run", "--json", "--budget", "2 h")
    doc = json.loads(result.stdout)
    assert result.returncode == 0 and doc["schema"] == "llama4spec.plan/1"
    assert doc["budget"] == {"text": "2 h", "unit": "wall", "seconds": 7200.0}
    assert doc["cost"]["total"]["starts"] == [4, 4] and doc["cost"]["total"]["runs"] == [16, 73]
    assert doc["cost"]["steps"]["capacity"]["gpu_hours"][0] <= doc["cost"]["steps"]["capacity"]["gpu_hours"][1]


def test_json_without_a_dry_run_is_refused(cli) -> None:
    result = cli("run", "tiny_cpu_capacity", "--json")
    assert result.returncode == 2 and "add --dry-run" in result.stderr
