"""A sweep measured until decided (``repeats: auto``) with real vLLM servers: the ``perfect`` step
of the shared ``sequential_run`` (tests/engine/conftest.py), the perfect pair's k=3 against no
speculation at concurrency 1, two server starts, at most 4 runs a point.

What must hold on any machine: every point ran between min_repeats and max_repeats times and has
one stop reason; a verdict never points against the medians it rests on; the decisions recomputed
from the records equal the ones recorded while measuring (what ``--resume`` relies on), and a
resumed run starts no server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.engine

POINTS = ["perfect-none-k3-c1", "perfect-tiny_eagle-k3-c1"]


def _record(run_dir: Path, pid: str) -> dict:
    return json.loads((run_dir / pid / "record.json").read_text())


def test_every_point_stops_once_within_its_bounds(sequential_run) -> None:
    _, run_dir = sequential_run
    status = json.loads((run_dir / "status.json").read_text())
    assert sum(1 for s in status["steps"] if s["kind"] == "serve" and s["id"].startswith("perfect-")) == 2
    for pid in POINTS:
        record = _record(run_dir, pid)
        assert 2 <= record["repeats"] <= 4, (pid, record["repeats"])
        assert record["stop"]["runs"] == record["repeats"]
        assert record["stop"]["reason"] in ("resolved", "eliminated", "max_repeats", "needs another server start")
    report = (run_dir / "perfect" / "report.md").read_text()
    # the stop reasons, one line a point (the prefix cache's lines, a point each, follow them)
    stops = report.split("measured until decided:", 1)[1].split("\n\n", 2)[1]
    assert stops.count("- perfect-tiny_eagle-k3-c1: ") == 1
    rows = (run_dir / "perfect" / "sweep.csv").read_text().splitlines()
    assert rows[0].split(",").count("stop") == 1


def test_a_verdict_follows_the_measured_medians(sequential_run) -> None:
    """Whatever this machine's speeds: a decided verdict points the way its medians do, and an
    undecided one says why it stopped (the perfect pair's k=3 measured 2-3x no speculation on the
    machines this ran on; a loaded machine may leave it undecided after 4 runs)."""
    import statistics

    _, run_dir = sequential_run
    eagle, base = (_record(run_dir, pid) for pid in reversed(POINTS))
    medians = [statistics.median(r["result"]["output_throughput"] for r in rec["runs"]) for rec in (eagle, base)]
    verdict = eagle["stop"]["verdict"]
    assert verdict in ("faster", "slower", "undecided"), eagle["stop"]
    if verdict == "undecided":
        assert eagle["stop"]["reason"] in ("max_repeats", "needs another server start"), eagle["stop"]
    else:
        assert (medians[0] > medians[1]) == (verdict == "faster"), (medians, eagle["stop"])


def test_decisions_recomputed_from_the_records_are_the_recorded_ones(sequential_run) -> None:
    from llama4spec.runbook.plan import plan_file
    from llama4spec.sweep.sequential import Settling, decisions

    runbook, run_dir = sequential_run
    plan = plan_file(runbook, lambda name: run_dir)
    for p in plan.steps:
        if p.kind != "settle" or not p.id.startswith("perfect-"):
            continue
        found, pick = decisions(plan, Settling.of(p.step.keys))
        assert pick is None, p.id
        for pid, d in found.items():
            assert d.record() == _record(run_dir, pid)["stop"], pid
    done = run_cli("run", str(runbook), "--resume", str(run_dir), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    status = json.loads((run_dir / "status.json").read_text())
    assert all(s.get("resumed") for s in status["steps"]
               if s["kind"] in ("serve", "bench", "settle") and s["id"].startswith("perfect-")), status["steps"]
