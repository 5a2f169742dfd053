"""``llama4spec report``: the sweep report rebuilt from the records alone equals the one the run
wrote; runs measured in several directories (or as groups) merge, and points that measured
different things are refused. Records are written as a finished run leaves them; no engine runs."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from llama4spec.errors import UserError
from llama4spec.runbook import execute
from llama4spec.runbook.merge import rebuild
from tests.unit.sweep.test_sweep_resume import _plan, _point, _throughput, write_record


def _console() -> Console:
    return Console(record=True, width=140, file=io.StringIO())


def _finished_run(run_dir: Path, scale: float = 1.0, *overrides: str) -> None:
    """A run of the tiny sweep whose every point was measured (records written, the report made by
    the executor as a resumed run makes it)."""
    plan = _plan(run_dir, *overrides)
    for p in plan.steps:
        if p.kind == "bench":
            write_record(p, *_point(p))
            if scale != 1.0:
                data = json.loads(p.artifacts["record"].read_text())
                data["result"]["output_throughput"] *= scale
                p.artifacts["record"].write_text(json.dumps(data))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "status.json").write_text(json.dumps({"runbook": "tiny_cpu_sweep"}))
    assert execute.run(plan, _console(), gate=None, environ={}, resume=True) == 0


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_rebuilt_report_equals_the_one_the_run_wrote(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _finished_run(run_dir)
    sweep = run_dir / "sweep"
    before = {name: (sweep / name).read_text() for name in ("report.md", "sweep.json", "sweep.csv")}
    summary = (run_dir / "summary.md").read_text()
    for name in before:
        (sweep / name).unlink()
    for png in sweep.glob("*.png"):
        png.unlink()
    assert rebuild([run_dir], None, _console()) == 0
    assert {name: (sweep / name).read_text() for name in before} == before
    assert sorted(p.name for p in sweep.glob("*.png")) == ["acceptance_by_position.png", "acceptance_per_request.png",
                                                            "frontier.png", "speedup.png",
                                                            "throughput_vs_concurrency.png"]
    rebuilt = (run_dir / "summary.md").read_text()
    assert rebuilt.split("## sweep", 1)[1] == summary.split("## sweep", 1)[1]


def test_the_report_command_rebuilds_in_place(cli, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _finished_run(run_dir)
    before = (run_dir / "sweep" / "report.md").read_text()
    (run_dir / "sweep" / "report.md").unlink()
    done = cli("report", str(run_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (run_dir / "sweep" / "report.md").read_text() == before
    assert "best lookahead by output throughput" in done.stdout


def test_two_runs_merge_into_one_with_every_run_of_each_point(tmp_path: Path) -> None:
    a, b, merged = tmp_path / "a", tmp_path / "b", tmp_path / "merged"
    _finished_run(a)
    _finished_run(b, 1.1)
    assert rebuild([a, b], merged, _console()) == 0
    rows = _csv(merged / "sweep" / "sweep.csv")
    assert len(rows) == 16 and {r["run"] for r in rows} == {"0", "1"}  # 8 points x 2 runs
    k3 = [float(r["result.output_throughput"]) for r in rows if r["id"] == "sweep-tiny_eagle-k3-c1"]
    assert k3 == pytest.approx([_throughput(3, 1), 1.1 * _throughput(3, 1)])
    analysis = json.loads((merged / "sweep" / "sweep.json").read_text())
    row = next(r for at in analysis["concurrency"] for r in at["rows"] if r["id"] == "sweep-tiny_eagle-k3-c1")
    assert row["repeats"] == 2 and row["intervals"]["output_throughput"]["method"] == "t"
    assert row["output_throughput"] == pytest.approx(1.05 * _throughput(3, 1))  # the median of two
    record = json.loads((merged / "sweep-tiny_eagle-k3-c1" / "record.json").read_text())
    assert record["repeats"] == 2
    # each directory's runs are a server start of their own: the comparisons count two starts
    assert [r.get("start", 1) for r in record["runs"]] == [1, 2]
    assert {r["server_start"] for r in rows} == {"1", "2"}
    status = json.loads((merged / "status.json").read_text())
    assert status["merged_from"] == [str(a), str(b)] and status["status"] == "merged"
    # the merged directory is a run directory itself
    assert rebuild([merged], None, _console()) == 0


def test_points_measured_differently_are_refused_naming_the_keys(cli, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _finished_run(a)
    _finished_run(b, 1.0, "bench.output_len=64")
    with pytest.raises(UserError) as err:
        rebuild([a, b], tmp_path / "merged", _console())
    assert "config bench.output_len" in str(err.value) and "differ" in str(err.value)
    done = cli("report", str(a), str(b), "--out", str(tmp_path / "m2"))
    assert done.returncode == 2 and "Traceback" not in done.stderr and "bench.output_len" in done.stderr


def test_where_a_point_ran_is_not_part_of_what_it_measured(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _finished_run(a)
    _finished_run(b, 1.0, "serve.port=8999")
    assert rebuild([a, b], tmp_path / "merged", _console()) == 0


def _groups_run(tmp_path: Path, spans: dict[str, tuple[str, str, str]] | None = None) -> Path:
    """The tiny sweep's records laid out as a launcher leaves them (the whole run in
    ``tmp_path/whole``), each group with its job.json (node, started, finished) when ``spans``
    gives one."""
    whole, run_dir = tmp_path / "whole", tmp_path / "run"
    _finished_run(whole)
    run_dir.mkdir()
    for name in ("plan.json", "status.json", "runbook.yaml"):
        shutil.copyfile(whole / name, run_dir / name)
    for group in ("sweep-none", "sweep-tiny_eagle-k1", "sweep-tiny_eagle-k3", "sweep-schedule"):
        g = run_dir / "groups" / group
        g.mkdir(parents=True)
        (g / "status.json").write_text("{}")
        if spans:
            node, started, finished = spans[group]
            (g / "job.json").write_text(json.dumps({"group": group, "node": node, "started": started,
                                                    "finished": finished}))
        for point in whole.glob(f"{group}-c*"):
            shutil.copytree(point, g / point.name)
    return run_dir


def test_group_runs_under_the_run_directory_are_merged(tmp_path: Path) -> None:
    run_dir = _groups_run(tmp_path)
    assert rebuild([run_dir], None, _console()) == 0
    assert (run_dir / "sweep" / "report.md").read_text() == (tmp_path / "whole" / "sweep" / "report.md").read_text()


def test_missing_points_are_named_and_the_exit_code_says_so(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _finished_run(run_dir)
    shutil.rmtree(run_dir / "sweep-tiny_eagle-k3-c4")
    assert rebuild([run_dir], None, _console()) == 1
    assert "sweep-tiny_eagle-k3-c4" in (run_dir / "sweep" / "report.md").read_text().split("not measured")[1]


def test_not_a_run_directory_is_a_clear_error(cli, tmp_path: Path) -> None:
    done = cli("report", str(tmp_path))
    assert done.returncode == 2 and "not a run directory" in done.stderr and "Traceback" not in done.stderr
    done = cli("report", str(tmp_path / "nope"))
    assert done.returncode == 2 and "no such run directory" in done.stderr


def test_broken_records_count_as_not_measured(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _finished_run(run_dir)
    (run_dir / "sweep-none-c1" / "record.json").write_text("[" * 100_000)  # nesting json cannot read
    (run_dir / "sweep-tiny_eagle-k1-c1" / "config.yaml").write_text("{{{")  # no config: what did it measure?
    assert rebuild([run_dir], None, _console()) == 1
    missing = (run_dir / "sweep" / "report.md").read_text().split("not measured")[1]
    assert "sweep-none-c1" in missing and "sweep-tiny_eagle-k1-c1" in missing



def test_points_compared_across_different_co_location_are_named(tmp_path: Path) -> None:
    t = "2026-12-01T10:{:02d}:00+0000".format
    # no speculation and k=1 ran at once on one node; k=3 and the schedule alone, later
    run_dir = _groups_run(tmp_path, {"sweep-none": ("n1", t(0), t(10)), "sweep-tiny_eagle-k1": ("n1", t(1), t(9)),
                                     "sweep-tiny_eagle-k3": ("n1", t(11), t(20)), "sweep-schedule": ("n1", t(21), t(30))})
    assert rebuild([run_dir], None, _console()) == 0
    report = (run_dir / "sweep" / "report.md").read_text()
    assert "co-location" in report
    line = next(x for x in report.splitlines() if x.startswith("- warning: concurrency 1:"))
    assert "sweep-none-c1 beside sweep-tiny_eagle-k1" in line and "sweep-tiny_eagle-k3-c1 alone" in line
    record = json.loads((run_dir / "sweep" / "sweep.json").read_text())
    assert record["colocation"]["beside"]["sweep-tiny_eagle-k1-c4"] == ["sweep-none"]


def test_groups_that_ran_one_after_another_or_on_other_nodes_draw_no_warning(tmp_path: Path) -> None:
    t = "2026-12-01T10:{:02d}:00+0000".format
    run_dir = _groups_run(tmp_path, {"sweep-none": ("n1", t(0), t(10)), "sweep-tiny_eagle-k1": ("n2", t(1), t(9)),
                                     "sweep-tiny_eagle-k3": ("n1", t(10), t(20)), "sweep-schedule": ("n3", t(0), t(30))})
    assert rebuild([run_dir], None, _console()) == 0
    assert "co-location" not in (run_dir / "sweep" / "report.md").read_text()
