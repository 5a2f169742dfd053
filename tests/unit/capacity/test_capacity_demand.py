"""GPUs for a load and the price at the capacity on a capacity run (simulated searches, no engine):
``load:`` and ``price:`` recorded in plan.json give, through ``report``, each setting's servers as
ceil(load / capacity) with the interval from the capacity's, the devices the draft saves, the price
of a million output tokens at the capacity, and the headline's clause; the pure parts in
tests/unit/frontier/test_load.py."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from tests.recorded_runs import finished_capacity_run
from tests.unit.conftest import run_in_process
from tests.unit.runbook.test_report_page import Parsed

LOAD, PRICE = 200.0, 2.5


@pytest.fixture(scope="module")
def demanded(tmp_path_factory) -> Path:
    run = finished_capacity_run(tmp_path_factory.mktemp("capacity") / "run")
    plan = json.loads((run / "plan.json").read_text())
    next(s for s in plan if s["id"] == "capacity")["capacity"].update(load=LOAD, price=PRICE)
    (run / "plan.json").write_text(json.dumps(plan))
    done = run_in_process("report", str(run))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return run


def test_each_setting_needs_the_ceiling_of_load_over_its_capacity(demanded) -> None:
    record = json.loads((demanded / "capacity" / "capacity.json").read_text())
    d = record["demand"]
    assert (d["load"], d["price"], d["device"]) == (LOAD, PRICE, "device")
    for name, s in record["settings"].items():
        mine = d["settings"][name]
        assert mine["servers"] == math.ceil(LOAD / s["rate"]) and mine["devices"] == mine["servers"]
        low, high = mine["devices_interval"]
        assert low == math.ceil(LOAD / s["high"]) and high == math.ceil(LOAD / s["low"])
        assert mine["price_per_million"] == pytest.approx(PRICE * 1e6 / (3600 * mine["output_tps"]))
    base = d["settings"]["no speculation"]
    for name, saved in d["saved"].items():
        assert saved["devices"] == base["devices"] - d["settings"][name]["devices"]
        assert saved["interval"] == [base["devices_interval"][0] - d["settings"][name]["devices_interval"][1],
                                     base["devices_interval"][1] - d["settings"][name]["devices_interval"][0]]


def test_the_report_and_the_headline_say_it(demanded) -> None:
    text = (demanded / "capacity" / "report.md").read_text()
    record = json.loads((demanded / "capacity" / "capacity.json").read_text())
    assert f"## For {LOAD:g} req/s (at {PRICE:g} a device-hour)" in text
    best = record["demand"]["settings"]["EAGLE k=3"]
    assert f"EAGLE k=3 needs {best['devices']} devices instead of {record['demand']['settings']['no speculation']['devices']}" \
        in record["headline"]
    body = Parsed((demanded / "report.html").read_text()).all_text()
    assert record["headline"] in body
    assert all(line in body for line in record["demand"]["lines"])


def test_without_a_load_or_price_there_is_no_such_section(demanded, tmp_path) -> None:
    run = Path(shutil.copytree(demanded, tmp_path / "run"))
    plan = json.loads((run / "plan.json").read_text())
    entry = next(s for s in plan if s["id"] == "capacity")["capacity"]
    del entry["load"], entry["price"]
    (run / "plan.json").write_text(json.dumps(plan))
    done = run_in_process("report", str(run))
    assert done.returncode == 0, done.stderr
    record = json.loads((run / "capacity" / "capacity.json").read_text())
    assert "demand" not in record and "## For " not in (run / "capacity" / "report.md").read_text()
    assert "needs" not in record["headline"]


def test_the_shipped_runbook_asks_for_a_load_and_a_price() -> None:
    from llama4spec.runbook.plan import plan_file
    from tests.helpers import REPO

    plan = plan_file(REPO / "runbooks" / "tiny_cpu_capacity.yaml", lambda name: Path("/nonexistent"), [])
    keys = plan.get("capacity").step.keys
    assert (keys.load, keys.price) == (LOAD, PRICE)


@pytest.mark.parametrize("flag,value,said", [("--load", "0", "--load must be a number above 0"),
                                             ("--load", "-3", "--load must be a number above 0"),
                                             ("--gpu-hour-price", "-1", "--gpu-hour-price must be a number from 0"),
                                             ("--gpu-hour-price", "nan", "--gpu-hour-price must be a number from 0")])
def test_a_bad_load_or_price_is_one_line(cli, flag, value, said) -> None:
    done = cli("capacity", "draft=none,tiny_eagle", "target=tiny", "memory=cpu", "bench=random_tiny", "slo.ttft_ms=500",
               flag, value, "--dry-run")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
