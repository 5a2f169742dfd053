"""``starts: N`` in the sequential design: each setting's server started N times, in rounds of a
random order drawn from ``order_seed`` (recorded in plan.json and shown by the dry run, so a dry
run is reproducible); later starts add their runs, tagged with the start, to the first start's
points, which is what the sweep's between-start estimate reads. Bad input is one line, exit 2.
Records are written here as runs would leave them; no engine runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from llama4spec.stats.speedup_model import points_noise
from llama4spec.results.bench import BenchRecord
from llama4spec.runbook.measured import collect_points
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.resume import finished_record
from llama4spec.sweep.design_starts import rounds

SWEEP = {"id": "sweep", "kind": "sweep", "repeats": 2,
         "matrix": {"draft": ["none", "tiny_eagle"], "lookahead": [1, 3], "bench.max_concurrency": [1, 4]}}


def _plan(tmp_path: Path, **keys):
    data = {"name": "starts", "overrides": ["target=tiny", "memory=cpu", "bench=random_tiny", "serve.port=8791"],
            "steps": [{**SWEEP, **keys}]}
    path = tmp_path / f"starts-{len(list(tmp_path.glob('*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(data))
    return plan_file(path, lambda name: tmp_path / "run")


def _write(planned, throughputs: list[float], starts: list[int]) -> None:
    runs = [BenchRecord(label=planned.id, returncode=0, result={"output_throughput": x, "completed": 8}, start=s)
            for x, s in zip(throughputs, starts)]
    BenchRecord.of_runs(planned.id, runs, argv=planned.argv).write(planned.artifacts["record"])


def test_rounds_hold_every_setting_once_in_an_order_the_seed_fixes() -> None:
    assert all(sorted(r) == [0, 1, 2] for r in rounds(3, 4, 11))
    assert rounds(3, 4, 11) == rounds(3, 4, 11)
    assert len({str(rounds(3, 4, seed)) for seed in range(10)}) > 1


def test_each_setting_is_started_n_times_in_the_recorded_order(tmp_path: Path) -> None:
    plan = _plan(tmp_path, starts=3, order_seed=5)
    once = _plan(tmp_path)
    serves = [p.id for p in plan.steps if p.kind == "serve"]
    sweep = plan.get("sweep")
    design = next(r for r in plan.to_record() if r["id"] == "sweep")["design"]
    assert design["starts"] == {"starts": 3, "order_seed": 5, "order": serves}
    first = [p.id for p in once.steps if p.kind == "serve"]  # three servers: none, k1, k3
    assert len(serves) == 9 and sorted(serves[:3]) == sorted(first)
    for k in (2, 3):  # every round starts every setting once
        assert sorted(s.removesuffix(f"-start{k}") for s in serves[3 * (k - 1):3 * k]) == sorted(first)
    assert sweep.step.expanded.points == once.get("sweep").step.expanded.points  # the same points, in the servers' order
    assert _plan(tmp_path, starts=3, order_seed=5).get("sweep").step.expanded.start_order == serves
    ids = [p.id for p in plan.steps]
    for p in plan.steps:
        keys = p.step.keys
        if p.kind == "bench" and keys.adds_to:  # a later start: its runs join the first start's point
            point = plan.get(keys.adds_to)
            assert keys.start in (2, 3) and p.step.server.endswith(f"-start{keys.start}")
            assert p.artifacts["record"] == point.artifacts["record"] and ids.index(point.id) < ids.index(p.id)
            assert keys.label == point.id and keys.repeats == 2 and point.step.keys.overrides == keys.overrides
            assert point.id in p.needs  # skipped, not failed, where the first start measured nothing
    assert sum(1 for p in plan.steps if p.kind == "bench" and p.step.keys.adds_to) == 12  # 3 servers x 2 concurrencies x 2
    assert all(p.step.keys.gate is None for p in plan.steps if p.kind == "serve")  # nothing skipped as dominated


def test_the_dry_run_shows_the_order(cli, tmp_path: Path) -> None:
    plan = _plan(tmp_path, starts=2, order_seed=3)
    path = next(tmp_path.glob("*.yaml"))
    done = cli("run", str(path), "--dry-run", "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if "starts: each setting's server is started 2 times" in line)
    assert line.endswith("Order: " + ", ".join(plan.get("sweep").step.expanded.start_order))


def test_runs_of_every_start_give_the_sweep_its_own_between_start_estimate(tmp_path: Path) -> None:
    plan = _plan(tmp_path, starts=3)
    points = plan.get("sweep").step.expanded.points
    for n, pid in enumerate(points):
        _write(plan.get(pid), [100.0 + n + d for d in (0.0, 0.4, 3.0, 3.5, -2.0, -1.7)], [1, 1, 2, 2, 3, 3])
    noise = points_noise(collect_points(plan, points)[0])
    assert noise.between.df > 0 and noise.between.var > 0 and noise.provisional is None
    assert noise.between.source == "estimated from this sweep's starts"
    for pid in points:  # the same runs as if from one start: nothing to estimate it from
        _write(plan.get(pid), [100.0, 100.4, 103.0, 103.5, 98.0, 98.3], [1] * 6)
    assert points_noise(collect_points(plan, points)[0]).between.df == 0
    for n, pid in enumerate(points):
        _write(plan.get(pid), [100.0 + n + d for d in (0.0, 0.4, 3.0, 3.5, -2.0, -1.7)], [1, 1, 2, 2, 3, 3])
    # later starts are finished (a resumed run) once their start has its runs in the point's record
    later = [p for p in plan.steps if p.kind == "bench" and p.step.keys.adds_to]
    assert all(finished_record(p) is not None for p in later)
    _write(plan.get(points[0]), [100.0, 100.4, 103.0], [1, 1, 2])
    assert [p.step.keys.start for p in later if p.step.keys.adds_to == points[0] and finished_record(p) is None] == [2, 3]


@pytest.mark.parametrize("keys, words", [
    ("starts: 0", ["'starts' must be a whole number from 1 to 20 (got 0)"]),
    ("starts: -2", ["'starts' must be a whole number from 1 to 20 (got -2)"]),
    ("starts: 1.5", ["'starts' must be a whole number from 1 to 20 (got 1.5)"]),
    ("starts: two", ["'starts' must be a whole number"]),
    ("starts: 2, repeats: auto", ["starts: 2", "repeats is auto", "revisit: true"]),
    ("order_seed: 4", ["order_seed", "starts: N"]),
])
def test_bad_starts_are_refused_in_one_line(cli, tmp_path: Path, keys: str, words: list[str]) -> None:
    book = tmp_path / "b.yaml"
    book.write_text("name: b\noverrides: [target=tiny, memory=cpu, bench=random_tiny]\nsteps:\n"
                    f"  - {{id: s, kind: sweep, matrix: {{draft: [none, tiny_eagle]}}, {keys}}}\n")
    done = cli("run", str(book), "--dry-run", "--runs-dir", str(tmp_path / "runs"))
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert all(w in lines[0] for w in words), lines[0]


def test_a_later_start_replaces_its_own_earlier_runs_and_warms_up_once(tmp_path: Path, monkeypatch) -> None:
    """The bench step of a later start, with the one function that measures a run replaced by one
    that appends a run of the start it is given (what ``serving.benchmark.run_more`` records)."""
    import contextlib
    from types import SimpleNamespace

    from llama4spec.runbook.steps import bench
    from llama4spec.serving import benchmark
    from llama4spec.serving.benchmark import BenchFiles

    calls = []

    def run_more(cfg, url, files, record, *, label, start, warmup, **_):
        calls.append((label, start, warmup))
        run = BenchRecord(label=label, returncode=0, result={"output_throughput": 90.0 + start, "completed": 8},
                          start=start)
        return record.with_runs([*(record.runs or [record]), run], None)

    monkeypatch.setattr(benchmark, "run_more", run_more)
    plan = _plan(tmp_path, starts=3, warmup=2)
    p = next(q for q in plan.steps if q.kind == "bench" and q.step.keys.start == 2)
    point = plan.get(p.step.keys.adds_to)
    _write(point, [100.0, 101.0, 95.0], [1, 1, 2])  # a run of start 2 left by an attempt cut short
    live = SimpleNamespace(count=None, line=None)
    run = SimpleNamespace(environ={}, benches=None, progress=SimpleNamespace(
        verbose=False, activity=lambda what: contextlib.nullcontext(live)))
    files = BenchFiles(p.artifacts["result"], p.artifacts["record"], p.artifacts["log"])
    record = bench._another_start(run, p, files)
    assert calls == [(point.id, 2, 2), (point.id, 2, 0)]
    assert [(r.start, r.figure("output_throughput")) for r in record.runs] == [(1, 100.0), (1, 101.0), (2, 92.0), (2, 92.0)]
