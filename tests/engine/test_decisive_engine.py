"""A sweep measured until decided (``repeats: auto``) with real vLLM servers, on a matrix built to
differ: the perfect pair's k=3 against no speculation at concurrency 1 (a 2-3x difference), and
the imperfect pair's k=2 against k=3 (close). Four server starts, at most 4 runs a point.

What must hold: every point ran between min_repeats and max_repeats times and has one stop
reason; the decisions recomputed from the records equal the ones recorded while measuring (what
``--resume`` relies on), and a resumed run starts no server; the clearly different pair stopped
after fewer runs than the close one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.engine

RUNBOOK = """\
name: decisive
env:
  VLLM_CPU_KVCACHE_SPACE: "1"
overrides: [target=tiny, memory=cpu, bench=random_tiny, bench.num_prompts=8, bench.output_len=64, serve.port=8761]
steps:
  - id: perfect
    kind: sweep
    matrix: {draft: [none, tiny_eagle], lookahead: [3], bench.max_concurrency: [1]}
    repeats: auto
    max_repeats: 4
    extra_args: [--ignore-eos]
  - id: imperfect
    kind: sweep
    needs: [perfect]
    matrix: {draft: [tiny_eagle_imperfect], lookahead: [2, 3], bench.max_concurrency: [1]}
    repeats: auto
    max_repeats: 4
    extra_args: [--ignore-eos]
"""
POINTS = {"perfect": ["perfect-none-k3-c1", "perfect-tiny_eagle-k3-c1"],
          "imperfect": ["imperfect-tiny_eagle_imperfect-k2-c1", "imperfect-tiny_eagle_imperfect-k3-c1"]}


@pytest.fixture(scope="module")
def decisive_run(tmp_path_factory, tiny_dir) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("decisive")
    runbook = base / "decisive.yaml"
    runbook.write_text(RUNBOOK)
    done = run_cli("run", str(runbook), "--runs-dir", str(base / "runs"), timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run_dir,) = (base / "runs" / "decisive").iterdir()
    return runbook, run_dir


def _record(run_dir: Path, pid: str) -> dict:
    return json.loads((run_dir / pid / "record.json").read_text())


def test_every_point_stops_once_within_its_bounds(decisive_run) -> None:
    _, run_dir = decisive_run
    status = json.loads((run_dir / "status.json").read_text())
    assert sum(1 for s in status["steps"] if s["kind"] == "serve") == 4
    for points in POINTS.values():
        for pid in points:
            record = _record(run_dir, pid)
            assert 2 <= record["repeats"] <= 4, (pid, record["repeats"])
            assert record["stop"]["runs"] == record["repeats"]
            assert record["stop"]["reason"] in ("resolved", "eliminated", "max_repeats", "needs another server start")
    report = (run_dir / "perfect" / "report.md").read_text()
    stops = report.split("measured until decided:", 1)[1]  # the stop reasons, one line a point
    assert stops.count("- perfect-tiny_eagle-k3-c1: ") == 1
    rows = (run_dir / "perfect" / "sweep.csv").read_text().splitlines()
    assert rows[0].split(",").count("stop") == 1


def test_the_clear_difference_is_never_called_slower_and_stops_no_later_when_decided(decisive_run) -> None:
    import statistics

    _, run_dir = decisive_run
    base, eagle = (_record(run_dir, pid) for pid in POINTS["perfect"])
    medians = [statistics.median(r["result"]["output_throughput"] for r in rec["runs"]) for rec in (eagle, base)]
    assert medians[0] > 1.5 * medians[1], medians  # the perfect pair at k=3: 2-3x here
    assert eagle["stop"]["verdict"] in ("faster", "undecided"), eagle["stop"]
    close = max(_record(run_dir, pid)["repeats"] for pid in POINTS["imperfect"])
    if eagle["stop"]["verdict"] == "faster":
        assert eagle["repeats"] <= close, (eagle["repeats"], close)
    else:  # on a loaded machine 4 runs against 2 of no speculation may not settle even 2x: then it says so
        assert eagle["stop"]["reason"] in ("max_repeats", "needs another server start"), eagle["stop"]


def test_decisions_recomputed_from_the_records_are_the_recorded_ones(decisive_run, tmp_path) -> None:
    from llama4spec.runbook.plan import plan_file
    from llama4spec.runbook.sequential import Rule, decisions

    runbook, run_dir = decisive_run
    plan = plan_file(runbook, lambda name: run_dir)
    for p in plan.steps:
        if p.kind != "settle":
            continue
        found, pick = decisions(plan, Rule.of(p.step.keys))
        assert pick is None, p.id
        for pid, d in found.items():
            assert d.record() == _record(run_dir, pid)["stop"], pid
    done = run_cli("run", str(runbook), "--resume", str(run_dir), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status = json.loads((run_dir / "status.json").read_text())
    assert all(s.get("resumed") for s in status["steps"] if s["kind"] in ("serve", "bench", "settle")), status["steps"]
