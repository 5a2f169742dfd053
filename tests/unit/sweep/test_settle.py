"""A sweep with ``repeats: auto``: planning adds a settle step per server, and the decisions a settle
step takes (which point gets the next run, why each stops) follow from the records alone, so a
resumed run keeps a server whose points are still open. Records are written here as runs would
leave them; no engine runs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from llama4spec.stats.noise import noise_record, prior as known_noise

from llama4spec.results.bench import BenchRecord
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.resume import finished_steps
from llama4spec.sweep.sequential import NEEDS_START, Settling, decisions
from tests.helpers import REPO

RUNBOOK = REPO / "runbooks" / "tiny_cpu_sweep.yaml"


def _plan(run_dir: Path, *overrides: str):
    """The sweep planned, its prior a between-start sd of 0.13 taken as known (the allocation's cases
    below were worked out with it; the CPU config's prior carries its 6 df)."""
    plan = plan_file(RUNBOOK, lambda name: run_dir, list(overrides), repeats="auto")
    for p in plan.steps:
        if p.step.expanded is not None and p.step.expanded.prior:
            p.step.expanded.prior = noise_record(known_noise(0.13, 0.0, "test"))
    return plan


def _write(planned, throughputs: list[float]) -> None:
    runs = [BenchRecord(label=planned.id, returncode=0, result={"output_throughput": x, "completed": 8})
            for x in throughputs]
    BenchRecord.of_runs(planned.id, runs, argv=planned.argv).write(planned.artifacts["record"])


def _settle(plan, server: str):
    return next(p for p in plan.steps if p.kind == "settle" and p.step.keys.server == server)


def test_auto_gives_each_server_a_settle_step_and_its_points_min_repeats(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    servers = [p.id for p in plan.steps if p.kind == "serve"]
    settles = [p for p in plan.steps if p.kind == "settle"]
    assert [s.step.keys.server for s in settles] == servers
    order = [p.id for p in plan.steps]
    for s in settles:  # after its server's benches, before its stop
        assert all(order.index(b) < order.index(s.id) for b in s.step.keys.points)
        assert order.index(s.id) < order.index(f"{s.step.keys.server}-stop")
    assert all(p.step.keys.repeats == 2 for p in plan.steps if p.kind == "bench")
    k3 = _settle(plan, "sweep-tiny_eagle-k3").step.keys
    assert k3.earlier == ["sweep-none-c1", "sweep-none-c4", "sweep-tiny_eagle-k1-c1", "sweep-tiny_eagle-k1-c4"]


def test_a_point_far_above_no_speculation_is_resolved_faster_an_equal_one_needs_another_start(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    bench = {p.id: p for p in plan.steps if p.kind == "bench"}
    _write(bench["sweep-none-c1"], [100.0, 101.0])
    _write(bench["sweep-none-c4"], [300.0, 303.0])
    _write(bench["sweep-tiny_eagle-k1-c1"], [400.0, 404.0, 398.0, 401.0])  # 4x: decided
    _write(bench["sweep-tiny_eagle-k1-c4"], [301.0, 299.0, 302.0, 300.0])  # equal: no run settles it
    found, pick = decisions(plan, Settling.of(_settle(plan, "sweep-tiny_eagle-k1").step.keys))
    assert found["sweep-tiny_eagle-k1-c1"].state == "resolved"
    assert found["sweep-tiny_eagle-k1-c1"].verdict == "faster"
    assert found["sweep-tiny_eagle-k1-c4"].state == NEEDS_START
    assert pick is None


def test_an_open_point_gets_the_next_run_until_max_repeats(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    bench = {p.id: p for p in plan.steps if p.kind == "bench"}
    _write(bench["sweep-none-c1"], [100.0, 100.5])
    _write(bench["sweep-none-c4"], [300.0, 301.0])
    _write(bench["sweep-tiny_eagle-k1-c1"], [100.0, 100.5])
    gap = math.exp(0.9)  # far beyond what the between-start spread leaves undecided, but noisy
    _write(bench["sweep-tiny_eagle-k1-c4"], [300.0 * gap, 300.0 * gap / 1.6])
    keys = _settle(plan, "sweep-tiny_eagle-k1").step.keys
    found, pick = decisions(plan, Settling.of(keys))
    assert found["sweep-tiny_eagle-k1-c4"].state == "open" and pick == "sweep-tiny_eagle-k1-c4"
    _write(bench["sweep-tiny_eagle-k1-c4"], [300.0 * gap, 300.0 * gap / 1.6] * 5)  # 10 runs: max_repeats
    found, pick = decisions(plan, Settling.of(keys))
    assert found["sweep-tiny_eagle-k1-c4"].runs == 10 and found["sweep-tiny_eagle-k1-c4"].state != "open"


def test_resume_keeps_a_server_whose_points_are_still_open(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    bench = {p.id: p for p in plan.steps if p.kind == "bench"}
    _write(bench["sweep-none-c1"], [100.0, 101.0] * 5)  # max_repeats: its measuring ended
    _write(bench["sweep-none-c4"], [300.0, 303.0] * 5)
    _write(bench["sweep-tiny_eagle-k1-c1"], [400.0, 404.0])
    _write(bench["sweep-tiny_eagle-k1-c4"], [300.0 * math.exp(0.9), 300.0 * math.exp(0.9) / 1.6])
    done = finished_steps(plan)
    assert "sweep-none" in done and "sweep-none-settle" in done  # no-speculation alone: nothing open
    assert "sweep-tiny_eagle-k1-c4" in done  # its counted runs stand ...
    assert "sweep-tiny_eagle-k1" not in done and "sweep-tiny_eagle-k1-settle" not in done  # ... and it gets more


@pytest.mark.parametrize("bad", ["sometimes", 0, 101, True])
def test_repeats_is_a_number_or_auto(tmp_path: Path, bad) -> None:
    from llama4spec.runbook.schema import parse

    _, problems = parse({"name": "x", "steps": [{"id": "s", "kind": "sweep", "matrix": {"lookahead": [1]},
                                                  "repeats": bad}]}, tmp_path / "x.yaml")
    assert any("'repeats' must be a whole number from 1 to 100, or auto" in p for p in problems), problems


def test_min_above_max_and_a_confidence_out_of_range_are_refused(tmp_path: Path) -> None:
    from llama4spec.runbook.schema import parse

    _, problems = parse({"name": "x", "steps": [{"id": "s", "kind": "sweep", "matrix": {"lookahead": [1]},
                                                  "repeats": "auto", "min_repeats": 5, "max_repeats": 3,
                                                  "confidence": 1.5}]}, tmp_path / "x.yaml")
    assert any("min_repeats (5) is larger than max_repeats (3)" in p for p in problems), problems
    assert any("'confidence' must be a number between 0.5 and 1" in p for p in problems), problems


def test_a_settle_step_is_not_written_in_a_runbook(tmp_path: Path) -> None:
    from llama4spec.errors import UserError
    from llama4spec.runbook.plan import make_plan
    from llama4spec.runbook.schema import parse

    runbook, problems = parse({"name": "x", "steps": [{"id": "s", "kind": "settle"}]}, tmp_path / "x.yaml")
    assert problems == []
    with pytest.raises(UserError, match="a settle step is made by a sweep step with 'repeats: auto'"):
        make_plan(runbook, tmp_path / "run")


def test_a_point_measured_alone_gets_max_repeats_runs(tmp_path: Path) -> None:
    """The first server's points (no speculation, compared with every later point) cannot get runs
    once their server is gone, and a pair is looked at at min(n_a, n_b): they are measured to
    max_repeats, so later points' runs move their comparisons forward."""
    plan = _plan(tmp_path)
    bench = {p.id: p for p in plan.steps if p.kind == "bench"}
    keys = _settle(plan, "sweep-none").step.keys
    _write(bench["sweep-none-c1"], [113.0, 153.7])
    _write(bench["sweep-none-c4"], [300.0, 301.0])  # precise already: still measured on
    found, pick = decisions(plan, Settling.of(keys))
    assert found["sweep-none-c1"].state == "open" and found["sweep-none-c4"].state == "open"
    assert pick in ("sweep-none-c1", "sweep-none-c4")
    _write(bench["sweep-none-c1"], [113.0, 153.7] * 5)  # 10 runs: max_repeats
    _write(bench["sweep-none-c4"], [300.0, 301.0] * 5)
    found, pick = decisions(plan, Settling.of(keys))
    assert found["sweep-none-c1"].state == "resolved" and pick is None


def test_a_point_whose_open_questions_wait_on_a_stopped_server_stops_and_says_so(tmp_path: Path) -> None:
    """k=3's verdict is decided; its place against k=1 is open, but k=1's server is gone after 2
    runs, so the pair stays at its second look whatever k=3 gets: k=3 stops (needs another start
    of k=1) instead of spending runs to max_repeats."""
    plan = _plan(tmp_path)
    bench = {p.id: p for p in plan.steps if p.kind == "bench"}
    _write(bench["sweep-none-c1"], [100.0, 101.0, 99.0, 100.5, 100.0] * 2)
    _write(bench["sweep-none-c4"], [300.0, 303.0, 299.0, 301.0, 300.0] * 2)
    _write(bench["sweep-tiny_eagle-k1-c1"], [150.0, 152.0])
    _write(bench["sweep-tiny_eagle-k1-c4"], [450.0, 455.0])
    _write(bench["sweep-tiny_eagle-k3-c1"], [300.0, 303.0, 298.0])
    _write(bench["sweep-tiny_eagle-k3-c4"], [900.0, 905.0, 898.0])
    found, pick = decisions(plan, Settling.of(_settle(plan, "sweep-tiny_eagle-k3").step.keys))
    k3 = found["sweep-tiny_eagle-k3-c1"]
    assert k3.verdict == "faster" and k3.state == NEEDS_START and k3.runs == 3, k3
    assert pick is None
