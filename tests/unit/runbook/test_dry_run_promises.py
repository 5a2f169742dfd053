"""A dry run checks every input and output path the run would check: ``run RUNBOOK --runs-dir
A_FILE --dry-run`` exited 0, and a compare step naming ``/etc/hostname`` as a benchmark result
passed the dry run. A compare step's files are read and checked to be benchmark results when
the run is planned, before anything starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

GOOD = {"output_throughput": 100.0, "completed": 16, "failed": 0, "mean_tpot_ms": 10.0}


def _compare_book(tmp_path: Path, baseline: str, candidate: str) -> Path:
    book = tmp_path / "cmp.yaml"
    book.write_text(f"name: cmp\nsteps:\n  - {{id: c, kind: compare, baseline: '{baseline}', "
                    f"candidate: '{candidate}'}}\n")
    return book


def _result(tmp_path: Path, name: str, data) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def _runs_dir_cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    return {"a file": (a_file, "is a file, not a directory"),
            "under a file": (a_file / "runs", "is a file, not a directory"),
            "under /proc": (Path("/proc/self/runs"), "cannot write")}


@pytest.mark.parametrize("case", ["a file", "under a file", "under /proc"])
@pytest.mark.parametrize("dry", [True, False])
def test_runs_dir_checked_as_the_run_checks_it(cli, tmp_path: Path, case: str, dry: bool) -> None:
    runs_dir, said = _runs_dir_cases(tmp_path)[case]
    good = _result(tmp_path, "good.json", GOOD)
    other = _result(tmp_path, "other.json", {**GOOD, "output_throughput": 120.0})
    book = _compare_book(tmp_path, good, other)  # no engine: safe to run for real
    done = cli("run", book, "--runs-dir", runs_dir, *(["--dry-run"] if dry else []))
    assert done.returncode == 2 and said in done.stderr and "--runs-dir" in done.stderr, done.stderr


def test_sweep_dry_run_checks_runs_dir(cli, tmp_path: Path) -> None:
    runs_dir, said = _runs_dir_cases(tmp_path)["a file"]
    done = cli("sweep", "lookahead=1,3", "--dry-run", "--runs-dir", runs_dir)
    assert done.returncode == 2 and said in done.stderr, done.stderr


def test_serve_dry_run_checks_log(cli, tmp_path: Path) -> None:
    done = cli("serve", "--dry-run", "--log", tmp_path)
    assert done.returncode == 2 and "--log" in done.stderr and "is a directory" in done.stderr, done.stderr


@pytest.mark.parametrize("bad, said", [
    ("/etc/hostname", "not valid JSON"),
    ([1, 2], "expected a JSON object"),
    ({"hello": 1}, "not a benchmark result"),
    ({**GOOD, "completed": 0}, "completed no request"),
    ({**GOOD, "output_throughput": -1}, "not a positive finite number"),
])
@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_compare_files_checked_before_anything_starts(cli, tmp_path: Path, bad, said: str, side: str) -> None:
    good = _result(tmp_path, "good.json", GOOD)
    path = bad if isinstance(bad, str) else _result(tmp_path, "bad.json", bad)
    book = _compare_book(tmp_path, *((path, good) if side == "baseline" else (good, path)))
    done = cli("run", book, "--dry-run", "--runs-dir", tmp_path / "runs")
    assert done.returncode == 2 and said in done.stderr and f"{side} " in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "runs").exists()


def test_compare_of_good_results_passes_the_dry_run(cli, tmp_path: Path) -> None:
    book = _compare_book(tmp_path, _result(tmp_path, "a.json", GOOD),
                         _result(tmp_path, "b.json", {**GOOD, "output_throughput": 150.0}))
    done = cli("run", book, "--dry-run", "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
