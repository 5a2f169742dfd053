"""``report A B --out M`` merges runs of one runbook with the same settings, and refuses in one line
(exit 2, nothing written) what it cannot combine: runs of other runbooks (a capacity run and a
sweep), other settings, one step id of two kinds, and capacity searches in more than one run. Nothing
is silently reduced to the first run. (One sweep measured in two designs merges, with a warning.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.recorded_runs import finished_capacity_run, finished_run


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("sweep") / "run", repeats=2)


@pytest.fixture(scope="module")
def capacity_run(tmp_path_factory) -> Path:
    return finished_capacity_run(tmp_path_factory.mktemp("capacity") / "run")


def _copy(run: Path, where: Path) -> Path:
    shutil.copytree(run, where, symlinks=True)
    return where


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _refused(cli, a: Path, b: Path, out: Path, *words: str) -> None:
    done = cli("report", str(a), str(b), "--out", str(out))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and all(w in lines[0] for w in words), done.stderr
    assert not out.exists() or not any(out.iterdir())


def test_two_capacity_runs_are_not_reduced_to_the_first(cli, capacity_run: Path, tmp_path: Path) -> None:
    other = _copy(capacity_run, tmp_path / "other")
    _refused(cli, capacity_run, other, tmp_path / "m", "searched in", "--resume")


def test_a_capacity_run_and_an_unrelated_sweep_are_refused(cli, capacity_run: Path, sweep_run: Path,
                                                           tmp_path: Path) -> None:
    _refused(cli, capacity_run, sweep_run, tmp_path / "m", "different runbooks")


def test_a_sweep_measured_in_two_designs_merges_with_a_warning(cli, sweep_run: Path, tmp_path: Path) -> None:
    other = _copy(sweep_run, tmp_path / "other")

    def interleaved(plan: list) -> None:
        for step in plan:
            if step["kind"] == "sweep":
                step["design"] = {"design": "interleaved", "asked": "interleaved"}
    _edit(other / "plan.json", interleaved)
    done = cli("report", str(sweep_run), str(other), "--out", str(tmp_path / "m"))
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines() if "designs differ" in line]
    assert len(said) == 1 and "sweep 'sweep'" in said[0] and "interleaved" in said[0] and "sequential" in said[0]


def test_one_step_id_of_two_kinds_is_refused(cli, sweep_run: Path, tmp_path: Path) -> None:
    other = _copy(sweep_run, tmp_path / "other")

    def renamed(plan: list) -> None:
        for step in plan:
            if step["id"] == "compare":
                step["kind"] = "offline"
    _edit(other / "plan.json", renamed)
    _refused(cli, sweep_run, other, tmp_path / "m", "step 'compare'", "compare step", "offline step")


def test_runs_of_other_settings_are_refused_even_without_a_common_point(cli, sweep_run: Path,
                                                                         tmp_path: Path) -> None:
    other = _copy(sweep_run, tmp_path / "other")
    _edit(other / "status.json", lambda s: s.update(overrides=["target=llama4_scout"]))
    _refused(cli, sweep_run, other, tmp_path / "m", "different settings", "target=llama4_scout")


def test_runs_of_one_runbook_and_settings_still_merge(cli, sweep_run: Path, tmp_path: Path) -> None:
    other = _copy(sweep_run, tmp_path / "other")
    _edit(other / "status.json", lambda s: s.update(overrides=["serve.port=8999"]))  # where, not what
    done = cli("report", str(sweep_run), str(other), "--out", str(tmp_path / "m"))
    assert done.returncode == 0, done.stdout + done.stderr
