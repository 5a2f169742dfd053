"""``revisit: true``: after the first pass, the servers whose points are still undecided start again
and measure them (min_repeats runs of the new start first), each restart a server start more; runs
of several starts carry less of one start's offset (``ratio.start_shares``), which is what lets a
question that "needs another server start" settle. Records are written here as runs would leave
them; no engine runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from llama4spec.results.bench import BenchRecord
from llama4spec.runbook.plan import plan_file
from llama4spec.sweep.gates import Revisit
from llama4spec.sweep.sequential import NEEDS_START, Settling, decisions, revisit_targets
from llama4spec.stats.ratio import start_floor, start_shares
from llama4spec.stats.sequential import allocate
from llama4spec.stats.statistic import LogRatio
from llama4spec.stats.noise import noise_record, prior as known_noise
BETWEEN_SD = 0.13
from tests.helpers import REPO


def _runbook(tmp_path: Path, **keys) -> Path:
    data = yaml.safe_load((REPO / "runbooks" / "tiny_cpu_sweep.yaml").read_text())
    sweep = data["steps"][0]
    sweep.pop("verify_schedule")
    sweep.update(matrix={"draft": ["none", "tiny_eagle"], "lookahead": [3], "bench.max_concurrency": [1, 4]},
                 revisit=True, max_repeats=8, **keys)
    data["steps"] = [sweep]
    path = tmp_path / "revisit.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _plan(tmp_path: Path, **keys):
    """The sweep planned, its prior a between-start sd of 0.13 taken as known (the cases below were
    worked out with it; the CPU config's prior carries its 6 df)."""
    plan = plan_file(_runbook(tmp_path, **keys), lambda name: tmp_path / "run")
    for p in plan.steps:
        if p.step.expanded is not None and p.step.expanded.prior:
            p.step.expanded.prior = noise_record(known_noise(BETWEEN_SD, 0.0, "test"))
    return plan


def _write(planned, throughputs: list[float], starts: list[int] | None = None) -> None:
    runs = [BenchRecord(label=planned.id, returncode=0, result={"output_throughput": x, "completed": 8}, start=s)
            for x, s in zip(throughputs, starts or [1] * len(throughputs))]
    BenchRecord.of_runs(planned.id, runs, argv=planned.argv).write(planned.artifacts["record"])


def _first_pass(tmp_path: Path):
    """The plan and its bench steps, with a first pass written: concurrency 1 decided (4x),
    concurrency 4 equal (needs another server start)."""
    plan = _plan(tmp_path)
    bench = {p.id: p for p in plan.steps if p.kind == "bench"}
    _write(bench["sweep-none-k3-c1"], [100.0, 101.0, 100.5])
    _write(bench["sweep-none-k3-c4"], [300.0, 303.0, 301.0])
    _write(bench["sweep-tiny_eagle-k3-c1"], [400.0, 404.0, 398.0])  # 4x: decided in the first pass
    _write(bench["sweep-tiny_eagle-k3-c4"], [301.0, 299.0, 302.0])  # equal: needs another start
    return plan, bench


def _step(plan, sid: str):
    return next(p for p in plan.steps if p.id == sid)


def test_start_shares_count_each_starts_runs() -> None:
    assert start_shares([1, 1, 1, 1]).tolist() == [1.0, 1.0, 1.0, 1.0]
    assert start_shares([1, 1, 2, 2]).tolist() == [1.0, 1.0, pytest.approx(5 / 9), 0.5]
    assert start_shares([[1, 2, -1]]).tolist() == [[1.0, 0.5, 0.5]]  # a run not measured counts for nothing


def test_two_starts_a_side_halve_the_between_start_term() -> None:
    a, b = np.log([110.0, 112.0, 111.0, 109.0]), np.log([100.0, 101.0, 99.0, 100.5])
    one, two = LogRatio(known_noise(BETWEEN_SD, 0.0, 'test')).compare(a, b), LogRatio(known_noise(BETWEEN_SD, 0.0, 'test')).compare(a, b, 0.5, 0.5)
    within = float(a.var(ddof=1) / 4 + b.var(ddof=1) / 4)
    assert float(one.se) ** 2 == pytest.approx(within + 2 * BETWEEN_SD ** 2)
    assert float(two.se) ** 2 == pytest.approx(within + BETWEEN_SD ** 2)
    assert start_floor(0.025, known_noise(BETWEEN_SD, 0.0, 'test'), 1.0) == pytest.approx(start_floor(0.025, known_noise(BETWEEN_SD, 0.0, 'test')) / math.sqrt(2))


def test_a_gap_one_start_cannot_settle_is_decided_over_several() -> None:
    runs = {"none": [100.0, 101.0, 99.0, 100.0] * 2, "k3": [140.0, 141.0, 139.0, 140.5] * 2}
    one = allocate(runs, "none", max_repeats=8, statistic=LogRatio(known_noise(BETWEEN_SD, 0.0, 'test')))
    assert one.points["k3"].verdict == "undecided"
    every_run = {pid: list(range(1, 9)) for pid in runs}  # each run its own start
    many = allocate(runs, "none", max_repeats=8, statistic=LogRatio(known_noise(BETWEEN_SD, 0.0, 'test')), starts=every_run)
    assert many.points["k3"].verdict == "faster" and many.points["k3"].starts == 8
    with pytest.raises(ValueError, match="server starts for"):
        allocate(runs, "none", max_repeats=8, starts={"k3": [1, 2]})


def test_revisit_plans_a_second_start_of_every_server_after_the_first_pass(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    order = [p.id for p in plan.steps]
    assert order[-1] == "sweep"
    revisits = [p for p in plan.steps if p.kind == "serve" and isinstance(p.step.keys.gate, Revisit)]
    assert [p.id for p in revisits] == ["sweep-none-k3-revisit", "sweep-tiny_eagle-k3-revisit"]
    assert order.index("sweep-tiny_eagle-k3-stop") < order.index("sweep-none-k3-revisit")
    settle = _step(plan, "sweep-tiny_eagle-k3-revisit-settle").step.keys
    assert settle.start == 2 and settle.points == ["sweep-tiny_eagle-k3-c1", "sweep-tiny_eagle-k3-c4"]
    assert settle.earlier == ["sweep-none-k3-c1", "sweep-none-k3-c4"] and settle.warmup == 2
    assert _step(plan, "sweep").step.expanded.points == [p for p in order if p.endswith(("-c1", "-c4"))]


def test_revisit_needs_repeats_auto_in_the_runbook_and_from_the_command_line(tmp_path: Path) -> None:
    from llama4spec.errors import UserError

    with pytest.raises(UserError, match="revisit: true restarts the servers of points still undecided, which needs"):
        _plan(tmp_path, repeats=3)
    with pytest.raises(UserError, match="--repeats 3 on step 'sweep': revisit: true restarts the servers"):
        plan_file(_runbook(tmp_path), lambda name: tmp_path / "run", repeats=3)


def test_only_servers_with_an_undecided_point_are_started_again(tmp_path: Path) -> None:
    plan, bench = _first_pass(tmp_path)
    first = Settling.of(_step(plan, "sweep-tiny_eagle-k3-settle").step.keys)
    assert decisions(plan, first)[0]["sweep-tiny_eagle-k3-c4"].state == NEEDS_START
    rule = Settling.of(_step(plan, "sweep-tiny_eagle-k3-revisit-settle").step.keys)
    assert revisit_targets(plan, rule) == {"sweep-none-k3-c4", "sweep-tiny_eagle-k3-c4"}
    serve = _step(plan, "sweep-tiny_eagle-k3-revisit")
    assert serve.step.kind_of.missing_input(plan, serve) is None

    _write(bench["sweep-tiny_eagle-k3-c4"], [3000.0, 3040.0, 2980.0])  # now decided everywhere
    for sid in ("sweep-none-k3-revisit", "sweep-tiny_eagle-k3-revisit"):
        serve = _step(plan, sid)
        assert "not revisited: the first pass left none of its points undecided" in serve.step.kind_of.missing_input(plan, serve)


def test_a_revisit_measures_its_undecided_points_on_the_new_start_first(tmp_path: Path) -> None:
    plan, bench = _first_pass(tmp_path)
    rule = Settling.of(_step(plan, "sweep-none-k3-revisit-settle").step.keys)
    found, pick = decisions(plan, rule)
    assert pick == "sweep-none-k3-c4" and found["sweep-none-k3-c4"].this_start == 0
    assert "sweep-none-k3-c1" not in revisit_targets(plan, rule)
    _write(bench["sweep-none-k3-c4"], [300.0, 303.0, 301.0, 302.0, 300.5], [1, 1, 1, 2, 2])
    found, _ = decisions(plan, rule)
    assert found["sweep-none-k3-c4"].starts == 2 and found["sweep-none-k3-c4"].this_start == 2
    assert found["sweep-none-k3-c4"].record()["starts"] == 2
    # the first pass's decisions, recomputed, see only the first start's runs: the ones it took
    first = Settling.of(_step(plan, "sweep-none-k3-settle").step.keys)
    assert decisions(plan, first)[0]["sweep-none-k3-c4"].runs == 3


def test_resume_keeps_a_revisit_server_until_its_first_pass_is_finished(tmp_path: Path) -> None:
    from llama4spec.runbook.resume import finished_steps

    plan = _plan(tmp_path)
    bench = {p.id: p for p in plan.steps if p.kind == "bench"}
    _write(bench["sweep-none-k3-c1"], [100.0, 101.0, 100.5])
    _write(bench["sweep-none-k3-c4"], [300.0, 303.0, 301.0])
    _write(bench["sweep-tiny_eagle-k3-c1"], [3000.0, 3040.0, 2980.0])
    assert "sweep-tiny_eagle-k3-revisit" not in finished_steps(plan)  # a first-pass point is still missing
    _write(bench["sweep-tiny_eagle-k3-c4"], [3000.0, 3040.0, 2980.0])  # all decided: nothing to revisit
    done = finished_steps(plan)  # nothing to revisit: left to the run, which skips them and says why
    assert not {"sweep-none-k3-revisit", "sweep-tiny_eagle-k3-revisit"} & set(done)
    serve = _step(plan, "sweep-tiny_eagle-k3-revisit")
    assert serve.step.kind_of.missing_input(plan, serve).startswith("not revisited")
    _write(bench["sweep-tiny_eagle-k3-c4"], [301.0, 299.0, 302.0])  # undecided, no run of the new start yet
    assert "sweep-tiny_eagle-k3-revisit" not in finished_steps(plan)
