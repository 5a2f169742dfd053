"""Records read back at plan time and by ``report``: a noise prior whose component would overflow
when squared (noise.json, plan.json), or a counted run whose throughput is 0, 5e-324 or negative, is
one line naming the file, the field and the rule; never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama4spec.results.bench import BenchRecord, read_record
from tests.recorded_runs import finished_run
from tests.unit.sweep.test_sweep_noise import _dry, _profile


def test_a_profile_whose_sd_overflows_stops_the_plan_in_one_line(cli, tmp_path) -> None:
    path = _profile(tmp_path, lambda d: d["between"].update(sd=1e308))
    done = _dry(cli, tmp_path, f"noise: {path}\n")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    line = next(x for x in done.stderr.splitlines() if "noise.json" in x)
    assert "'between.sd' is 1e+308, not a log-sd from 0 to 10" in line


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("sweep") / "run", repeats=2)


def _copy(run: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(run, tmp_path / "run"))


def test_report_refuses_a_recorded_prior_that_overflows(cli, sweep_run, tmp_path) -> None:
    run = _copy(sweep_run, tmp_path)
    plan = json.loads((run / "plan.json").read_text())
    step = next(s for s in plan if s["id"] == "sweep")
    step["design"]["noise_prior"]["between"]["sd"] = 1e308
    (run / "plan.json").write_text(json.dumps(plan))
    done = cli("report", str(run))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stdout + done.stderr
    assert str(run / "plan.json") in lines[0] and "'between.sd' is 1e+308, not a log-sd from 0 to 10" in lines[0]


@pytest.mark.parametrize("rate", [0.0, 5e-324, -5.0, "fast"])
def test_a_counted_run_whose_throughput_is_no_rate_is_refused_naming_the_field(tmp_path, rate) -> None:
    runs = [BenchRecord(label="x", returncode=0, result={"output_throughput": x, "completed": 8}) for x in (90.0, rate)]
    (tmp_path / "record.json").write_text(json.dumps(BenchRecord.of_runs("p", runs).to_dict()))  # the writer refuses it
    record, problem = read_record(tmp_path / "record.json")
    assert record is None and problem is not None and "\n" not in problem
    assert str(tmp_path / "record.json") in problem and "'runs[1].result.output_throughput'" in problem


def test_report_leaves_out_a_point_whose_run_has_no_rate(cli, sweep_run, tmp_path) -> None:
    run = _copy(sweep_run, tmp_path)
    path = sorted(run.glob("sweep-*/record.json"))[0]
    data = json.loads(path.read_text())
    data["runs"][1]["result"]["output_throughput"] = 5e-324
    path.write_text(json.dumps(data))
    done = cli("report", str(run))
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert "'runs[1].result.output_throughput' is 5e-324" in (run / "sweep" / "report.md").read_text()
