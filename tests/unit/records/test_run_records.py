"""plan.json, status.json, host.json, environment.json and job.json through their models: every record
the tool writes reads back; a damaged field is one line naming the file, the field and the rule (the
reader's ``UserError``, exit 2 for the command that reads it, no traceback, nothing written); the
writers check through the same models and write the same bytes as before."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from llama4spec.errors import UserError
from llama4spec.files import json_text, write_json
from llama4spec.records import host, job, plan, status  # noqa: F401  (each registers its record)
from llama4spec.records.registry import ENTRIES
from tests.recorded_runs import finished_capacity_run, finished_run
from tests.unit.records.examples_h1 import EXAMPLES

BAD: list[tuple[str, Any]] = [("NaN", math.nan), ("huge", 1e308), ("negative", -1), ("text", "x"),
                              ("5 MB", "x" * (5 << 20)), ("markup", "[/x]"), ("a list", [1])]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("records") / "run", repeats=2)


@pytest.fixture(scope="module")
def capacity(tmp_path_factory) -> Path:
    return finished_capacity_run(tmp_path_factory.mktemp("capacity") / "run")


def _copy(run: Path, where: Path) -> Path:
    shutil.copytree(run, where, symlinks=True)
    return where


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_every_record_the_tool_writes_reads_back(key: str, tmp_path: Path) -> None:
    path = EXAMPLES[key](tmp_path)
    entry = ENTRIES[key]
    assert entry.read(path) is not None and Path(entry.file).name == path.name


def test_a_capacity_run_and_a_legacy_status_read_back(capacity: Path, tmp_path: Path) -> None:
    for name in ("plan", "status", "host", "environment"):
        ENTRIES[name].read(capacity / f"{name}.json")
    (tmp_path / "summary.json").write_text(json.dumps({"runbook": "tiny_cpu_sweep", "steps": []}))
    assert status.read(tmp_path / "summary.json").runbook == "tiny_cpu_sweep"


def _top_fields(key: str, data: Any) -> tuple[Any, list[str]]:
    """The mapping whose fields are corrupted (a plan's first step) and their names."""
    target = data[0] if isinstance(data, list) else data
    return target, [k for k in target if k not in ("result", "design", "capacity", "cost", "budget")]


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_each_field_corrupted_is_one_line_naming_the_file_and_the_field(key: str, tmp_path: Path) -> None:
    path = EXAMPLES[key](tmp_path)
    original = json.loads(path.read_text())
    if key == "environment":
        original = {**original, "VLLM_LOGGING_LEVEL": "INFO"}
    _, names = _top_fields(key, original)
    refused = 0
    for name in names:
        for _what, value in BAD:
            data = json.loads(json.dumps(original))
            target, _ = _top_fields(key, data)
            target[name] = value
            path.write_text(json.dumps(data, allow_nan=True))
            try:
                ENTRIES[key].read(path)
            except UserError as err:
                text = str(err)
                assert "\n" not in text and str(path) in text and name in text, text
                assert len(text) < 2_000, text[:200]
                refused += 1
    assert refused > len(names)  # most corruptions are refused, each in one line


def test_writers_write_the_same_bytes_and_refuse_what_their_reader_would(tmp_path: Path) -> None:
    from llama4spec.runbook.recorder import Recorder

    data = {"runbook": "x", "status": "done", "steps": [{"id": "a", "kind": "bench", "status": "done"}]}
    Recorder(tmp_path).json("status.json", data)
    write_json(tmp_path / "plain.json", data)
    assert (tmp_path / "status.json").read_bytes() == (tmp_path / "plain.json").read_bytes()
    assert (tmp_path / "status.json").read_text() == json_text(data) + "\n"
    with pytest.raises(UserError, match=r"status\.json: 'steps\.0\.status' is 'bogus', not pending"):
        Recorder(tmp_path / "other").json("status.json", {**data, "steps": [{"id": "a", "status": "bogus"}]})
    assert not (tmp_path / "other" / "status.json").exists()
    from llama4spec.launch import group

    with pytest.raises(UserError, match="'group' is '../x', not a step id"):
        group.record(tmp_path, "g", {"group": "../x"})


def _one_line(done, *words: str) -> str:
    output = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in output, output
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and all(w in lines[0] for w in words), output
    return lines[0]


def test_report_names_a_damaged_plan_field(cli, run: Path, tmp_path: Path) -> None:
    copy = _copy(run, tmp_path / "run")
    _edit(copy / "plan.json", lambda d: d[1].update(argv=["vllm", "x" * (5 << 20)]))
    before = (copy / "status.json").read_bytes()
    _one_line(cli("report", str(copy)), "plan.json", "'1.argv.1'", "at most 65536 characters")
    assert (copy / "status.json").read_bytes() == before  # nothing written


def test_report_and_resume_name_a_damaged_status_field(cli, run: Path, tmp_path: Path) -> None:
    copy = _copy(run, tmp_path / "run")
    _edit(copy / "status.json", lambda d: d["steps"][0].update(status="bogus"))
    _one_line(cli("report", str(copy)), "status.json", "'steps.0.status' is 'bogus', not pending")
    _one_line(cli("run", "tiny_cpu_sweep", "--resume", str(copy), "--dry-run"), "status.json", "'steps.0.status'")


@pytest.mark.parametrize("name,change,words", [
    ("host.json", lambda d: d["host"].update(cpu_count=1e308), ["'host.cpu_count' is 1e+308, not a count"]),
    ("host.json", lambda d: d["versions"].update(vllm=7), ["'versions.vllm' is 7"]),
    ("environment.json", lambda d: d.update(VLLM_LOGGING_LEVEL="x" * (5 << 20)), ["'VLLM_LOGGING_LEVEL'"]),
    ("environment.json", lambda d: d.update({"NOT A NAME": "1"}), ["'NOT A NAME", "variable names"]),
])
def test_regress_names_a_damaged_host_or_environment_field(cli, run: Path, tmp_path: Path, name, change,
                                                           words) -> None:
    new = _copy(run, tmp_path / "new")
    _edit(new / name, change)
    _one_line(cli("regress", str(run), str(new)), name, *words)


def test_a_damaged_job_record_gives_no_span_and_the_launcher_no_place(tmp_path: Path) -> None:
    """job.json is read where the launcher and report.html say where groups ran: one this tool did not
    write says nothing (no node, no span), as documented; its reader names the field."""
    from llama4spec.launch import jobs
    from llama4spec.runbook import colocation

    path = EXAMPLES["job"](tmp_path)
    run = path.parents[2]
    assert jobs.group_where(run, "sweep-none")["devices"] == {"CUDA_VISIBLE_DEVICES": "0,1"}
    _edit(path, lambda d: d.update(node=5))
    assert jobs.group_where(run, "sweep-none") == {} and colocation.read_spans(run) == []
    with pytest.raises(UserError, match=r"job\.json: 'node' is 5, not text of at most 4096 characters"):
        job.read(path)
