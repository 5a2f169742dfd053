"""``revisit: true`` with real vLLM servers (the ``sweep`` step of the shared ``sequential_run``,
tests/engine/conftest.py): no speculation against the imperfect pair's k=2 at
concurrency 4, a gap the between-start spread alone leaves undecided on this machine, so the first
pass ends "needs another server start" and both servers start once more. At most 4 server starts,
at most 6 runs a point.

What must hold: a server starts again exactly when the first pass's records leave one of its
points undecided (recomputed from the records); a revisited point's runs after the first pass come
from the second start, min_repeats of them (unless max_repeats came first), and its stop reason
says 2 starts; sweep.csv says each run's start; the decisions recomputed from the records equal the
recorded ones; a resumed run starts no server.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.engine

POINTS = ["sweep-none-k2-c4", "sweep-tiny_eagle_imperfect-k2-c4"]


def _record(run_dir: Path, pid: str) -> dict:
    return json.loads((run_dir / pid / "record.json").read_text())


def test_servers_start_again_exactly_for_the_points_left_undecided(sequential_run) -> None:
    from llama4spec.runbook.plan import plan_file
    from llama4spec.sweep.sequential import Settling, revisit_targets

    runbook, run_dir = sequential_run
    status = {s["id"]: s for s in json.loads((run_dir / "status.json").read_text())["steps"]}
    plan = plan_file(runbook, lambda name: run_dir)
    settle = next(p for p in plan.steps if p.kind == "settle" and p.step.keys.start == 2)
    targets = revisit_targets(plan, Settling.of(settle.step.keys))  # from the first start's runs alone
    for pid in POINTS:
        server = pid.removesuffix("-c4")
        again = status[f"{server}-revisit"]
        record = _record(run_dir, pid)
        starts = [r.get("start", 1) for r in record["runs"]]
        assert starts == sorted(starts) and 2 <= len(starts) <= 6, starts
        if pid in targets:
            assert again["status"] == "done", again
            assert starts.count(2) >= 2 or len(starts) == 6, starts
            assert record["stop"]["starts"] == 2 and record["stop"]["runs"] == len(starts), record["stop"]
        else:
            assert again["status"] == "skipped" and again["reason"].startswith("not revisited"), again
            assert 2 not in starts
    started = sum(1 for s in status.values() if s["kind"] == "serve" and s["status"] == "done" and s["id"].startswith("sweep-"))
    assert started == 2 + len(targets) <= 4
    rows = list(csv.DictReader((run_dir / "sweep" / "sweep.csv").open()))
    if targets:
        assert {r["server_start"] for r in rows if r["id"] in targets} == {"1", "2"}


def test_revisit_decisions_recompute_and_resume_starts_nothing(sequential_run) -> None:
    from llama4spec.runbook.plan import plan_file
    from llama4spec.sweep.sequential import Settling, decisions

    runbook, run_dir = sequential_run
    plan = plan_file(runbook, lambda name: run_dir)
    status = {s["id"]: s for s in json.loads((run_dir / "status.json").read_text())["steps"]}
    last: dict[str, dict] = {}  # point -> the decision of the last settle step that ran over it
    for p in plan.steps:
        if p.kind == "settle" and p.id.startswith("sweep-") and status[p.id]["status"] == "done":
            found, pick = decisions(plan, Settling.of(p.step.keys))
            assert pick is None, p.id
            last.update({pid: d.record() for pid, d in found.items()})
    assert set(last) == set(POINTS)
    for pid, stop in last.items():
        assert stop == _record(run_dir, pid)["stop"], pid
    done = run_cli("run", str(runbook), "--resume", str(run_dir), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    steps = json.loads((run_dir / "status.json").read_text())["steps"]
    assert not any(s["kind"] == "serve" and s["status"] == "done" and not s.get("resumed") for s in steps), steps
