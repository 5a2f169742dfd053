"""``report A B --out M`` where A measured a sweep interleaved (its baseline's runs tagged with the
candidate each pairs with) and B measured the same points sequentially: the runs merge, and the
report says in one warning line that the two designs differ and what that means (back-to-back pairs
come from one run only; the merged points' comparison is not back to back)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from tests.helpers import REPO

INTERLEAVED = REPO / "runbooks" / "tiny_cpu_interleaved.yaml"
BASE, CAND = "sweep-none-k2", "sweep-tiny_eagle_imperfect-k2"


def _interleaved_run(run_dir: Path) -> Path:
    """An interleaved run whose every pair was measured, as the run leaves it."""
    from llama4spec.results.bench import BenchRecord
    from llama4spec.runbook import execute
    from llama4spec.runbook.plan import plan_file

    plan = plan_file(INTERLEAVED, lambda name: run_dir)
    steps = {p.id: p for p in plan.steps}
    for c in (1, 4):
        base, cand = steps[f"{BASE}-c{c}"], steps[f"{CAND}-c{c}"]

        def run(x: float, pair: str | None = None) -> BenchRecord:
            return BenchRecord(label="x", returncode=0, pair=pair,
                               result={"output_throughput": x, "completed": 16, "max_concurrency": c})

        drift = [1.0, 0.8, 0.9, 0.85, 0.95]
        BenchRecord.of_runs(base.id, [run(100 * c * d, cand.id) for d in drift], argv=base.argv).write(
            base.artifacts["record"])
        BenchRecord.of_runs(cand.id, [run(130 * c * d) for d in drift], argv=cand.argv).write(cand.artifacts["record"])
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "status.json").write_text(json.dumps({"runbook": "tiny_cpu_interleaved"}))
    assert execute.run(plan, Console(file=io.StringIO()), gate=None, environ={}, resume=True) == 0
    return run_dir


def _sequential_copy(run: Path, where: Path) -> Path:
    """The same points measured sequentially: its plan's design says so, no run is tagged with a pair."""
    shutil.copytree(run, where, symlinks=True)
    plan = json.loads((where / "plan.json").read_text())
    for step in plan:
        if step["kind"] == "sweep":
            step["design"] = {"design": "sequential", "asked": "sequential", "margin": step["design"]["margin"]}
    (where / "plan.json").write_text(json.dumps(plan))
    for record in where.glob("*/record.json"):
        data = json.loads(record.read_text())
        for r in [data, *data.get("runs", [])]:
            r.pop("pair", None)
        record.write_text(json.dumps(data))
    return where


@pytest.fixture(scope="module")
def two_designs(tmp_path_factory, ) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("designs")
    mp = pytest.MonkeyPatch()
    mp.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1")  # room for the two servers side by side
    try:
        a = _interleaved_run(root / "a")
    finally:
        mp.undo()
    return a, _sequential_copy(a, root / "b")


def test_an_interleaved_and_a_sequential_run_merge_with_one_warning(cli, two_designs, tmp_path: Path) -> None:
    a, b = two_designs
    out = tmp_path / "m"
    done = cli("report", str(a), str(b), "--out", str(out))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    said = [line for line in (done.stdout + done.stderr).splitlines() if "designs differ" in line]
    assert len(said) == 1, done.stdout + done.stderr
    line = said[0]
    assert line.startswith("warning: sweep 'sweep'") and "interleaved in" in line and "sequential in" in line
    assert "pairs come from one run only" in line and "not back to back" in line
    status = json.loads((out / "status.json").read_text())
    assert status["status"] == "merged" and line in status["notes"]
    assert line in (out / "summary.md").read_text()
    merged = json.loads((out / f"{BASE}-c1" / "record.json").read_text())
    assert len(merged["runs"]) == 10  # both runs' runs: the merge went ahead


def test_runs_of_one_design_merge_without_that_warning(cli, two_designs, tmp_path: Path) -> None:
    a, _ = two_designs
    other = tmp_path / "other"
    shutil.copytree(a, other, symlinks=True)
    done = cli("report", str(a), str(other), "--out", str(tmp_path / "m"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "designs differ" not in done.stdout + done.stderr
