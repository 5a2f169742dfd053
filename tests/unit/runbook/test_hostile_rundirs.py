"""Run directories as input (``report``, ``--resume``, ``--into``, ``cancel``, merges) are validated
like planning input: a directory that is not a run, a run of another runbook, records of the wrong
type, cut short, foreign, huge or nested too deep, NaN or negative figures, a config.yaml alias
bomb, ids that are paths, symlinks leading outside, a read-only directory. Each is one line (exit 2,
or the point named as not measured), never a traceback, and nothing is written outside the named
output directory. Launcher options that cannot work are refused the same way."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable

import pytest

from llama4spec.files import read_json
from llama4spec.runbook.resume import finished_steps
from tests.unit.runbook.test_report_rebuild import _finished_run
from tests.unit.runbook.test_runbook_input_bounds import BOMB
from tests.unit.sweep.test_sweep_resume import _plan

POINT = "sweep-tiny_eagle-k3-c1"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("finished") / "run"
    _finished_run(run)
    return run


@pytest.fixture
def run(finished: Path, tmp_path: Path) -> Path:
    """A copy of a finished run of the tiny sweep, under ``tmp_path/run``."""
    copy = tmp_path / "run"
    shutil.copytree(finished, copy, symlinks=True)
    return copy


def _one_line(done, *words: str) -> str:
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert done.returncode == 2, output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def _edit_json(path: Path, change: Callable) -> None:
    data = json.loads(path.read_text())
    path.write_text(json.dumps(change(data)))


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


# -- records of the run itself: the run directory is refused in one line ---------------------------
def _plan_id(data):
    data[0]["id"] = "../escaped"
    return data


REFUSED: list[tuple[str, Callable[[Path], None], list[str]]] = [
    ("plan id is a path", lambda r: _edit_json(r / "plan.json", _plan_id), ["not a record this tool wrote"]),
    ("plan is a mapping", lambda r: (r / "plan.json").write_text("{}"), ["plan.json: 'the record' is {}, not a plan"]),
    ("plan lists no steps", lambda r: (r / "plan.json").write_text("[]"), ["plan.json: 'the record' is [], not a plan"]),
    ("plan is null", lambda r: (r / "plan.json").write_text("null"), ["plan.json: holds null"]),
    ("status is null", lambda r: (r / "status.json").write_text("null"), ["status.json: holds null"]),
    ("plan needs an int", lambda r: _edit_json(r / "plan.json", lambda d: [{**d[0], "needs": 5}, *d[1:]]),
     ["plan.json: '0.needs' is 5, not a list of step ids"]),
    ("steps: 5", lambda r: _edit_json(r / "status.json", lambda d: {**d, "steps": 5}), ["status.json: 'steps' is 5, not a list of steps"]),
    ("comparisons: [1, 2]", lambda r: _edit_json(r / "status.json", lambda d: {**d, "comparisons": [1, 2]}),
     ["status.json: 'comparisons' is [1, 2], not step ids and their tables"]),
    ("runbook: 7", lambda r: _edit_json(r / "status.json", lambda d: {**d, "runbook": 7}), ["status.json: 'runbook' is 7, not a name"]),
    ("status cut short", lambda r: (r / "status.json").write_text('{"runbook": "tiny_cpu_sweep", "st'),
     ["status.json", "ends early"]),
    ("status is a FIFO", lambda r: ((r / "status.json").unlink(), os.mkfifo(r / "status.json")),
     ["not a regular file"]),
    ("status nested deep", lambda r: (r / "status.json").write_text("[" * 100_000 + "]" * 100_000),
     ["nested more than 64"]),
    ("plan of several hundred MB", lambda r: open(r / "plan.json", "r+b").truncate(300 << 20),
     ["larger than 65,536 KiB"]),
    ("no records at all", lambda r: [(r / n).unlink() for n in ("status.json", "plan.json")],
     ["not a run directory"]),
]


@pytest.mark.parametrize("name,spoil,words", REFUSED, ids=[c[0] for c in REFUSED])
def test_report_refuses_a_spoiled_run_in_one_line(cli, run: Path, tmp_path: Path, name, spoil, words) -> None:
    spoil(run)
    before = _files(tmp_path)
    _one_line(cli("report", str(run)), *words)
    assert _files(tmp_path) == before  # nothing written, here or beside it
    assert not (tmp_path / "escaped").exists()


def test_a_merge_refuses_a_spoiled_run_and_writes_nothing(cli, run: Path, finished: Path, tmp_path: Path) -> None:
    _edit_json(run / "plan.json", _plan_id)
    _one_line(cli("report", str(finished), str(run), "--out", str(tmp_path / "merged")), "../escaped")
    assert not (tmp_path / "merged").exists() and not (tmp_path / "escaped").exists()


def test_resume_refuses_spoiled_status_and_another_runbooks_run(cli, run: Path) -> None:
    _edit_json(run / "status.json", lambda d: {**d, "runbook": "tiny_cpu_eagle_vs_baseline"})
    _one_line(cli("run", "tiny_cpu_sweep", "--resume", str(run), "--dry-run"), "run of runbook")
    (run / "status.json").write_text('{"runbook": "tiny_cp')
    _one_line(cli("run", "tiny_cpu_sweep", "--resume", str(run), "--dry-run"), "--resume", "ends early")


def test_a_directory_that_is_not_a_run(cli, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    _one_line(cli("report", str(tmp_path)), "not a run directory")
    _one_line(cli("report", str(tmp_path / "nope")), "no such run directory")
    _one_line(cli("report", str(tmp_path / "notes.txt")), "no such run directory")


# -- a point's own records: the point is not measured, and the report says why -------------------
def _record(r: Path) -> Path:
    return r / POINT / "record.json"


def _result(change: Callable[[dict], dict]) -> Callable[[Path], None]:
    return lambda r: _edit_json(_record(r), lambda d: {**d, "result": change(d["result"])})


POINTS: list[tuple[str, Callable[[Path], None], str | None]] = [
    ("record cut short", lambda r: _record(r).write_text(_record(r).read_text()[:200]), "ends early"),
    ("record foreign", lambda r: _record(r).write_text(json.dumps({"output_throughput": 5.0, "completed": 3})),
     "not a llama4spec bench record"),
    ("record of several hundred MB", lambda r: open(_record(r), "r+b").truncate(300 << 20), "larger than"),
    ("record nested deep", lambda r: _record(r).write_text("[" * 100_000 + "]" * 100_000), "nested more than"),
    ("config alias bomb", lambda r: (r / POINT / "config.yaml").write_text(BOMB), "expands to more than"),
    ("config max_concurrency: many", lambda r: (r / POINT / "config.yaml").write_text(
        (r / POINT / "config.yaml").read_text().replace("max_concurrency: 1\n", "max_concurrency: many\n")),
     "bench.max_concurrency is 'many'"),
    ("config not a mapping", lambda r: (r / POINT / "config.yaml").write_text("- 1\n- 2\n"), "not a composed config"),
    ("acceptance counters of strings", lambda r: _edit_json(_record(r), lambda d: {
        **d, "acceptance": {"num_drafts": "many", "accepted_per_pos": [1, -2]},
        "runs": [{**x, "acceptance": {"num_drafts": float("nan")}} for x in d.get("runs", [])]}), None),
    ("NaN figures", _result(lambda x: {**x, "output_throughput": float("nan"), "mean_tpot_ms": float("inf")}), None),
    ("negative figures", _result(lambda x: {**x, "output_throughput": -5.0, "mean_tpot_ms": -1.0,
                                            "completed": -3}), None),
    ("figures of the wrong type", _result(lambda x: {**x, "output_throughput": "fast", "max_concurrency": "many"}),
     None),
]


@pytest.mark.parametrize("name,spoil,reason", POINTS, ids=[c[0] for c in POINTS])
def test_a_spoiled_point_is_reported_not_crashed(cli, run: Path, name, spoil, reason) -> None:
    spoil(run)
    done = cli("report", str(run))
    output = done.stdout + done.stderr
    assert "Traceback" not in output and done.returncode in (0, 1), output
    report = (run / "sweep" / "report.md").read_text()
    if reason is not None:
        assert done.returncode == 1 and POINT in report and reason in report, report


@pytest.mark.parametrize("spoil", [POINTS[0][1], POINTS[1][1], POINTS[2][1], POINTS[3][1]],
                         ids=["cut short", "foreign", "huge", "deep"])
def test_resume_measures_a_spoiled_record_again_and_says_so(run: Path, spoil) -> None:
    spoil(run)
    plan = _plan(run)
    notes: list[str] = []
    done = finished_steps(plan, notes)
    assert POINT not in done and "sweep-tiny_eagle-k3-c4" in done
    assert len(notes) == 1 and POINT in notes[0] and "\n" not in notes[0], notes


# -- writing: only inside the named output directory ----------------------------------------------
def test_a_step_directory_linked_outside_is_never_written_through(cli, run: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.rmtree(run / "sweep")
    (run / "sweep").symlink_to(outside)
    _one_line(cli("report", str(run)), "symlink", "sweep")
    assert list(outside.iterdir()) == []


def test_a_record_linked_outside_is_replaced_not_followed(cli, run: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine.md"
    mine.write_text("my notes\n")
    (run / "summary.md").unlink()
    (run / "summary.md").symlink_to(mine)
    done = cli("report", str(run))
    assert done.returncode == 0, done.stdout + done.stderr
    assert mine.read_text() == "my notes\n" and not (run / "summary.md").is_symlink()


def test_report_out_never_overwrites_the_users_files(cli, run: Path, finished: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.md").write_text("my summary\n")
    _one_line(cli("report", str(run), "--out", str(out)), "--out", "did not write")
    assert [p.name for p in out.iterdir()] == ["summary.md"] and (out / "summary.md").read_text() == "my summary\n"
    merged = tmp_path / "merged"
    assert cli("report", str(run), str(finished), "--out", str(merged)).returncode == 0
    assert cli("report", str(run), str(finished), "--out", str(merged)).returncode == 0  # its own: rewritten


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_read_only_run_directory_is_one_line(cli, run: Path) -> None:
    os.chmod(run, 0o555)
    try:
        _one_line(cli("report", str(run)), "cannot write")
    finally:
        os.chmod(run, 0o755)


# -- cancel: job ids read back reach scancel only as Slurm job ids --------------------------------
def _slurm_run(tmp_path: Path, job_id: str) -> Path:
    run = tmp_path / "detached"
    run.mkdir()
    jobs = [{"group": "sweep-tiny_eagle-k3", "job_id": job_id, "shape": "1 CPU", "state": "running"}]
    (run / "status.json").write_text(json.dumps({"runbook": "tiny_cpu_sweep", "launcher": "slurm",
                                                 "status": "submitted", "jobs": jobs}))
    return run


class Calls(list):
    """Every command the Slurm launcher ran; ``code``: the exit code each program answers with."""

    code: dict[str, int]


@pytest.fixture
def scancel(monkeypatch) -> Calls:
    import subprocess

    from llama4spec.launch import slurm

    calls = Calls()
    code = calls.code = {"scancel": 0}

    def fake(argv, **kwargs):
        calls.append(list(argv))
        return subprocess.CompletedProcess(argv, code.get(argv[0], 0), "", "scancel: error: Kill job error\n")

    monkeypatch.setattr(slurm.subprocess, "run", fake)
    return calls


@pytest.mark.parametrize("job_id", ["--me", "-u", "1;rm", "12 13", "../x", "1_2_3", "x" * 50])
def test_cancel_never_passes_what_is_not_a_job_id(cli, tmp_path: Path, scancel, job_id: str) -> None:
    run = _slurm_run(tmp_path, job_id)
    _one_line(cli("cancel", str(run)), "not a Slurm job id", "nothing was cancelled")
    assert not any(argv[0] == "scancel" for argv in scancel)
    assert json.loads((run / "status.json").read_text())["status"] == "submitted"


def test_cancel_reports_a_failing_scancel(cli, tmp_path: Path, scancel) -> None:
    run = _slurm_run(tmp_path, "123_0")
    scancel.code["scancel"] = 1
    _one_line(cli("cancel", str(run)), "scancel 123 failed", "Kill job error")
    assert ["scancel", "123"] in scancel
    scancel.code["scancel"] = 0
    done = cli("cancel", str(run))
    assert done.returncode == 0 and "cancelled Slurm job 123" in done.stdout
    assert read_json(run / "status.json")["status"] == "cancelled"


@pytest.mark.parametrize("status,words", [
    ({"runbook": "x", "launcher": "slurm", "jobs": 5}, ["'jobs' is 5, not a list of jobs"]),
    ({"runbook": "x", "launcher": "slurm", "jobs": [5]}, ["'jobs.0' is 5"]),
    ({"runbook": "x", "launcher": "slurm", "jobs": [{"group": "../x", "job_id": "1"}]},
     ["'jobs.0.group' is '../x', not a step id"]),
    ([1, 2], ["not a run status"]),
])
def test_cancel_refuses_wrongly_typed_records(cli, tmp_path: Path, scancel, status, words) -> None:
    (tmp_path / "status.json").write_text(json.dumps(status))
    _one_line(cli("cancel", str(tmp_path)), *words)
    assert not scancel


# -- launcher options and empty values ------------------------------------------------------------
LAUNCHER = [
    (["--shard", "0/0"], ["--shard", "1 <= i <= n"]),
    (["--shard", "3/2"], ["--shard", "1 <= i <= n"]),
    (["--only-group=--into"], ["--only-group", "not a server group"]),
    (["--only-group", "../../etc"], ["--only-group", "not a server group"]),
    (["--only-group", "a/b"], ["not a server group"]),
    (["--only-group", ""], ["--only-group ''", "empty value"]),
    (["--parallel", "0"], ["--parallel 0"]),
    (["--parallel", "100000"], ["--parallel 100000", "give --parallel"]),
    (["--runs-dir", ""], ["--runs-dir ''", "empty value"]),
    (["--resume="], ["--resume ''", "empty value"]),
    (["--only-group", "sweep-tiny_eagle-k3", "--into", "README.md"], ["--into README.md", "is a file"]),
]


@pytest.mark.parametrize("extra,words", LAUNCHER, ids=[" ".join(c[0]) for c in LAUNCHER])
def test_launcher_options_that_cannot_work_are_one_line(cli, extra, words) -> None:
    _one_line(cli("run", "tiny_cpu_sweep", *extra, "--dry-run"), *words)


@pytest.mark.parametrize("argv,words", [
    (["tiny-models", ""], ["''", "empty argument"]),
    (["report", "runs/x", "--out", " "], ["--out ' '"]),
    (["bench", "--url", "", "--label", "x"], ["--url ''"]),
    (["compare", "", "b.json"], ["empty argument"]),
])
def test_an_empty_value_is_never_a_silent_default(cli, argv, words) -> None:
    _one_line(cli(*argv), *words)
