"""Every number read back from a record goes through one reader (``files.number``, ``files.count``):
finite and within what a measurement reaches, before any arithmetic. A record holding 10^400
requests, a goodput of 1e308 or a wrongly typed key is one line or "not measured", never a
traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llama4spec.errors import UserError
from llama4spec.results.bench import BenchRecord
from tests.recorded_runs import finished_capacity_run, finished_run


@pytest.mark.parametrize("value", [10**400, -10**400, 1e308, float("inf"), float("nan"), True, "3", None, [1]],
                         ids=["10^400", "-10^400", "1e308", "inf", "nan", "bool", "text", "none", "list"])
def test_the_reader_refuses_what_is_no_figure(value) -> None:
    from llama4spec.files import count, number

    assert number(value) is None and count(value) is None


def test_the_reader_keeps_figures() -> None:
    from llama4spec.files import count, number

    assert number(3) == 3.0 and number(2.5, 0, 3) == 2.5 and number(-1, 0) is None and count(7, 1, 10) == 7


def test_a_goodput_and_duration_of_1e308_are_not_measured() -> None:
    result = {"completed": 5, "failed": 0, "request_goodput": 1e308, "duration": 1e308}
    with pytest.raises(UserError) as info:  # a record read back: its model refuses them, naming the field
        BenchRecord.from_dict({"kind": "llama4spec.bench", "label": "x", "returncode": 0, "result": result})
    assert "'result.request_goodput' is 1e+308, not a throughput from 0 to 1e9 per second" in str(info.value)
    record = BenchRecord(label="x", returncode=0, result=result)  # vLLM's own result: not measured
    assert record.good_requests is None and record.attainment is None


def _one_line(done) -> str:
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def capacity_run(tmp_path_factory) -> Path:
    return finished_capacity_run(tmp_path_factory.mktemp("capacity") / "run")


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("sweep") / "run", repeats=2)


def test_a_search_with_10_to_the_400_requests_is_one_line(cli, capacity_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(capacity_run, run, symlinks=True)
    path = next(run.rglob("search.json"))
    text = path.read_text()
    data = json.loads(text)
    data["probes"][0]["runs"][0]["requests"] = 10**400
    path.write_text(json.dumps(data))
    line = _one_line(cli("report", str(run)))
    assert "search.json" in line and "requests" in line and len(line) < 600, line


def test_a_merge_of_records_with_a_goodput_of_1e308_does_not_overflow(cli, sweep_run: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(sweep_run, a, symlinks=True)
    shutil.copytree(sweep_run, b, symlinks=True)
    for path in [*a.rglob("record.json"), *b.rglob("record.json")]:
        data = json.loads(path.read_text())
        for run in [data, *data.get("runs", [])]:
            run["result"].update(request_goodput=1e308, duration=1e308)
        path.write_text(json.dumps(data))
    done = cli("report", str(a), str(b), "--out", str(tmp_path / "merged"))
    assert "Traceback" not in done.stdout + done.stderr and "OverflowError" not in done.stderr, done.stderr
    # each record is refused by its model, naming the field: its point is left out (not measured)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "'result.request_goodput' is 1e+308" in (tmp_path / "merged" / "sweep" / "report.md").read_text()


def test_a_status_with_overrides_5_is_one_line(cli, sweep_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(sweep_run, run, symlinks=True)
    status = json.loads((run / "status.json").read_text())
    status["overrides"] = 5
    (run / "status.json").write_text(json.dumps(status))
    assert "overrides" in _one_line(cli("report", str(run)))
