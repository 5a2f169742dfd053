"""The bench and capacity records through their models (``records.bench``, ``records.points``,
``capacity.records``): every example reads back; a damaged field read by the command that
reads it is one line naming the file and the field, exit 2, no traceback; the writers refuse what
their model refuses; the acceptance length is bounded by the recorded lookahead."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import llama4spec.records.bench as bench_model
import llama4spec.records.points as points_model
import llama4spec.capacity.records as capacity_model
from llama4spec.errors import UserError
from llama4spec.records.registry import ENTRIES
from llama4spec.results.acceptance import AcceptanceCounters
from llama4spec.results.bench import BenchRecord
from tests.unit.records.examples_h2 import EXAMPLES

assert bench_model and points_model and capacity_model  # registered at import


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_each_example_reads_back_through_its_registered_reader(key, tmp_path) -> None:
    entry = ENTRIES[key]
    assert isinstance(entry.read(EXAMPLES[key](tmp_path)), entry.model)


def _one_line(done) -> str:
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def _damage(path: Path, change) -> Path:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("change, said", [
    (lambda d: d["result"].update(output_throughput=1e308),
     "'result.output_throughput' is 1e+308, not a throughput from 0 to 1e9 per second"),
    (lambda d: d["runs"][1]["acceptance"].update(num_drafts=-3), "'runs[1].acceptance.num_drafts' is -3"),
    (lambda d: d.update(label="x" * (5 << 20)), "'label' is 'xxx"),
])
def test_compare_of_a_damaged_bench_record_is_one_line(cli, tmp_path, change, said) -> None:
    good = EXAMPLES["bench"](tmp_path / "a")
    bad = _damage(EXAMPLES["bench"](tmp_path / "b"), change)
    line = _one_line(cli("compare", str(good), str(bad)))
    assert str(bad) in line and said in line, line


def test_report_of_a_damaged_search_json_is_one_line_and_writes_nothing(cli, tmp_path) -> None:
    path = _damage(EXAMPLES["capacity_search"](tmp_path), lambda d: d["probes"][0]["runs"][0].update(attainment=1.5))
    run = path.parent.parent
    before = (run / "capacity" / "capacity.json").read_bytes()
    line = _one_line(cli("report", str(run)))
    assert str(path) in line and "'probes[0].runs[0].attainment' is 1.5, not a share from 0 to 1" in line, line
    assert (run / "capacity" / "capacity.json").read_bytes() == before


def test_a_resumed_search_refuses_a_damaged_search_json_in_one_line(tmp_path) -> None:
    from llama4spec.capacity import probing as cap
    from llama4spec.capacity import search as search_step

    path = _damage(EXAMPLES["capacity_search"](tmp_path), lambda d: d["thresholds"].update(ttft=-1))
    p = SimpleNamespace(artifacts={"search": path})
    with pytest.raises(UserError) as info:
        search_step._recorded(p, cap.Settings(start=1.0), {})
    said = str(info.value)
    assert "\n" not in said and str(path) in said and "'thresholds.ttft' is -1, not milliseconds above 0" in said
    path.write_text(json.dumps({**json.loads(path.read_text()), "thresholds": {}}))
    assert search_step._recorded(p, cap.Settings(start=1.0), {"another": "search"}) is None  # another search's


def test_an_acceptance_length_beyond_k_plus_1_is_refused_naming_the_field(tmp_path) -> None:
    record = BenchRecord("x", returncode=0, lookahead=2, acceptance=AcceptanceCounters(10, 30, 25, [9, 8, 8]),
                         result={"completed": 4, "output_throughput": 50.0})
    with pytest.raises(UserError) as info:  # 25 accepted in 10 drafts: 3.5 tokens a step at k=2
        record.write(tmp_path / "record.json")
    assert "'acceptance.mean_acceptance_length' is 3.5, not an acceptance length from 1 to 3 (lookahead 2 + 1)" \
        in str(info.value)
    record.lookahead = 3
    record.write(tmp_path / "record.json")
    assert bench_model.read(tmp_path / "record.json").acceptance.mean_acceptance_length == 3.5


def test_the_writers_refuse_what_their_model_refuses(tmp_path) -> None:
    points = json.loads(EXAMPLES["points"](tmp_path).read_text())
    points[0]["request_throughput"] = -2.0
    with pytest.raises(UserError) as info:
        points_model.write(tmp_path / "again" / "summary.json", points)
    said = str(info.value)
    assert str(tmp_path / "again" / "summary.json") in said and not (tmp_path / "again" / "summary.json").exists()
    assert "'[0].request_throughput' is -2.0, not a throughput from 0 to 1e9 per second" in str(info.value)
    found = json.loads(EXAMPLES["capacity"](tmp_path / "c").read_text())
    next(iter(found["settings"].values()))["rate"] = float("inf")
    assert capacity_model.checked_capacity(found, "capacity.json") is found  # infinity is written null
    next(iter(found["settings"].values()))["rate"] = -1.0
    with pytest.raises(UserError) as info:
        capacity_model.checked_capacity(found, "capacity.json")
    assert "\n" not in str(info.value) and ".rate' is -1.0, not a request rate from 0 to 1e9" in str(info.value)


def test_a_record_written_reads_back_to_the_same_dict(tmp_path) -> None:
    path = EXAMPLES["bench"](tmp_path)
    record = BenchRecord.from_dict(json.loads(path.read_text()), "x", str(path))
    record.write(tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == record.to_dict()
    assert BenchRecord.from_dict(record.to_dict()).to_dict() == record.to_dict()


def test_a_summary_of_requests_sent_at_once_is_written(tmp_path) -> None:
    """vLLM writes ``request_rate: "inf"`` for requests sent at once (its default): the points' model takes it."""
    from llama4spec.records import points
    from llama4spec.results.bench import BenchRecord
    from llama4spec.runbook.rundir import vllm_runs

    record = BenchRecord(label="p", returncode=0, lookahead=0, result={
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4, "completed": 8, "output_throughput": 50.0})
    points.write(tmp_path / "summary.json", vllm_runs({"draft": {}, "bench": {"max_concurrency": 4}}, record))
    assert points.read(tmp_path / "summary.json").root[0].request_rate == "inf"
