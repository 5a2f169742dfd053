"""Back-to-back blocks (``design: interleaved`` with ``starts: J``): for each candidate J blocks,
each no speculation's server and the candidate's started together on the two halves of the
devices, ``repeats`` pairs alternating, then both stopped; block j + 1 crosses the halves over;
each round visits the candidates in a seeded random order. Block j's runs are tagged as server
start j. A comparison rests on the block means: t on J - 1 df from their own spread with 3 or more
blocks, the noise components with 2. Records are written here as a run leaves them; no engine runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from llama4spec.stats.point import blocks_of, server_starts
from llama4spec.stats.speedup_model import analyse, points_noise
from llama4spec.stats.design import block_half_width
from llama4spec.stats.noise import prior as known_noise
from llama4spec.analysis.points import point
from llama4spec.results import bench as bench_record
from llama4spec.results.bench import BenchRecord, without_pair
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.block_order import rounds
from llama4spec.sweep.planned import design_of

SWEEP = {"id": "sweep", "kind": "sweep", "design": "interleaved", "starts": 3, "order_seed": 4, "repeats": 2,
         "matrix": {"draft": ["none", "tiny_eagle"], "lookahead": [1, 3], "bench.max_concurrency": [1, 4]}}
BASE = "sweep-none"
CANDS = ["sweep-tiny_eagle-k1", "sweep-tiny_eagle-k3"]


def _plan(tmp_path: Path, monkeypatch, **keys):
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1")
    data = {"name": "blocks", "overrides": ["target=tiny", "memory=cpu", "bench=random_tiny", "serve.port=8791"],
            "steps": [{**SWEEP, **keys}]}
    path = tmp_path / f"blocks-{len(list(tmp_path.glob('*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(data))
    return plan_file(path, lambda name: tmp_path / "run")


def test_each_candidate_gets_j_blocks_crossed_over_in_seeded_rounds(tmp_path, monkeypatch) -> None:
    plan = _plan(tmp_path, monkeypatch)
    serves = [p for p in plan.steps if p.kind == "serve"]
    assert len(serves) == 2 * 3 * 2  # 3 blocks of 2 candidates, two servers a block
    pairs = list(zip(serves[::2], serves[1::2]))
    order = [cand.id for _, cand in pairs]
    expected = [CANDS[i] + ("" if j == 1 else f"-block{j}") for j, r in enumerate(rounds(2, 3, 4), 1) for i in r]
    assert order == expected == plan.get("sweep").step.expanded.start_order
    for n, (base, cand) in enumerate(pairs):
        j = n // 2 + 1
        assert base.step.keys.beside is None and cand.step.keys.beside == base.id and cand.needs == [base.id]
        assert not base.composed.cfg.draft.method and cand.composed.cfg.draft.method
        # block 1 no speculation on core 0, block 2 on core 1, block 3 on core 0 again
        assert base.env["VLLM_CPU_OMP_THREADS_BIND"] == ("0" if j % 2 else "1")
        assert cand.env["VLLM_CPU_OMP_THREADS_BIND"] == ("1" if j % 2 else "0")
        ids = [p.id for p in plan.steps]
        stops = [p for p in plan.steps if p.kind == "stop" and p.step.server in (base.id, cand.id)]
        assert len(stops) == 2 and all(ids.index(s.id) < ids.index(pairs[n + 1][0].id) for s in stops
                                       if n + 1 < len(pairs))  # both stopped before the next block
    points = plan.get("sweep").step.expanded.points
    assert points == [f"{BASE}-c1", f"{BASE}-c4", *(f"{c}-c{k}" for c in CANDS for k in (1, 4))]
    benches = [p for p in plan.steps if p.kind == "bench"]
    for p in benches:
        keys = p.step.keys
        assert keys.block and keys.start in (1, 2, 3)
        server = plan.get(p.step.server)
        if keys.paired:  # no speculation's runs of the block join its point's record
            assert not server.composed.cfg.draft.method
            assert (keys.adds_to is None) == (p.id in points) and (keys.adds_to or p.id) in points[:2]
        else:  # a candidate's pairs, with the collecting step of its own block's baseline
            base = plan.get(keys.pair_with)
            assert base.step.server == plan.get(p.step.server).step.keys.beside and base.step.keys.start == keys.start
            assert keys.repeats == 2 and (keys.adds_to or p.id) in points[2:]
            if keys.adds_to:
                assert p.artifacts["record"] == plan.get(keys.adds_to).artifacts["record"]
                assert keys.adds_to in p.needs and keys.label == keys.adds_to
        if keys.adds_to or keys.paired:
            assert p.artifacts["record"] == plan.get(keys.adds_to or p.id).artifacts["record"]
    assert sum(1 for p in benches if not p.step.keys.paired) == 2 * 3 * 2  # candidates x blocks x concurrencies
    design = next(r for r in plan.to_record() if r["id"] == "sweep")["design"]
    assert design["design"] == "interleaved" and "starts" not in design
    assert design["blocks"] == {"blocks": 3, "runs": 2, "order_seed": 4, "order": order}
    swapped = _plan(tmp_path, monkeypatch, swap_devices=True)
    first = next(p for p in swapped.steps if p.kind == "serve")
    assert first.env["VLLM_CPU_OMP_THREADS_BIND"] == "1"
    other = _plan(tmp_path, monkeypatch, order_seed=1)
    assert other.get("sweep").step.expanded.start_order != order or rounds(2, 3, 1) == rounds(2, 3, 4)


def test_the_dry_run_describes_blocks_crossover_order_and_precision(cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1")
    plan = _plan(tmp_path, monkeypatch)
    path = next(tmp_path.glob("*.yaml"))
    done = cli("run", str(path), "--dry-run", "--runs-dir", str(tmp_path / "runs"),
               env={"VLLM_CPU_OMP_THREADS_BIND": "0-1"})
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "design: back-to-back blocks" in x)
    assert "3 blocks" in line and "2 pairs" in line and "crossed over" in line and "order_seed 4" in line
    assert line.endswith("Order: " + ", ".join(plan.get("sweep").step.expanded.start_order))
    assert "expected precision: a speedup against no speculation from 3 blocks of 2 pairs" in done.stdout
    assert "pairs of block 2, each a run of" in done.stdout


def _run(x: float, start: int, pair: str | None = None, concurrency: int = 4) -> BenchRecord:
    return BenchRecord(label="x", returncode=0, pair=pair, start=start,
                       result={"output_throughput": x, "completed": 16, "max_concurrency": concurrency})


def _points(offsets: list[float], ratio: float, k: int = 3, other: bool = True):
    """No speculation and candidate c (and another, d) measured in len(offsets) blocks of k pairs:
    block j's servers share an offset, each pair its drift; c is ``ratio`` times faster at best."""
    base_runs, c_runs, d_runs = [], [], []
    rng = np.random.default_rng(5)
    for j, off in enumerate(offsets, 1):
        for i in range(k):
            drift = float(np.exp(rng.normal(0, 0.05)))
            base_runs.append(_run(100 * off * drift, j, "c"))
            c_runs.append(_run(100 * ratio * off * drift * (1 + 0.01 * (i - 1) * (j % 2 or -1)), j))
            if other:
                base_runs.append(_run(90 * off * drift, j, "d"))
                d_runs.append(_run(90 * 1.1 * off * drift, j))
    pts = [point("b", {"draft": {"method": None}}, BenchRecord.of_runs("b", base_runs)),
           point("c", {"draft": {"method": "eagle", "name": "e"}, "lookahead": 2}, BenchRecord.of_runs("c", c_runs))]
    if other:
        pts.append(point("d", {"draft": {"method": "eagle", "name": "e"}, "lookahead": 3},
                         BenchRecord.of_runs("d", d_runs)))
    return pts


def test_three_or_more_blocks_rest_on_their_own_spread() -> None:
    from scipy import stats

    pts = _points([1.0, 0.6, 1.3, 0.8], 1.3)
    base, c = pts[0], pts[1]
    blocks = blocks_of(base, pts[1:])[("c", "b")]
    assert [len(b) for b in blocks] == [3, 3, 3, 3]
    (at,) = analyse(pts, noise=known_noise(0.2, 0.2, "test")).at  # the prior's size does not enter
    comp = at.comparisons[("c", "b")]
    assert comp.method == "blocks" and comp.basis == "4 blocks' own spread (3 df)" and at.blocks
    means = np.array([np.log(b).mean() for b in blocks])
    assert math.isclose(comp.ratio, math.exp(means.mean()), rel_tol=1e-9)
    half = stats.t.ppf(1 - comp.level, 3) * means.std(ddof=1) / 2
    assert math.isclose(comp.interval.low, math.exp(means.mean() - half), rel_tol=1e-9)
    assert comp.interval.df == 3 and comp.verdict == "faster" and "on 4 blocks' own spread (3 df)" in comp.text()
    assert comp.hypotheses == 6  # b, c, d: one Holm family of 3 x 2 one-sided hypotheses
    assert at.comparisons[("b", "c")].basis == comp.basis  # mirrored
    # the candidates against each other: Welch, their blocks' starts apart
    assert at.comparisons[("c", "d")].method == "welch" and at.comparisons[("c", "d")].basis is None
    assert len(set(server_starts(base))) == 8 and server_starts(c) == c.starts  # (candidate, block) apart


def test_two_blocks_rest_on_the_components_with_the_paired_part_estimated() -> None:
    pts = _points([1.0, 0.7], 1.25, other=False)
    noise = points_noise(pts, known_noise(0.05, 0.05, "prior", 10, 10))
    assert noise.paired is not None and noise.paired.df == 2 * 2  # 2 blocks of 3 pairs: sum(K - 1)
    (at,) = analyse(pts, noise=noise).at
    comp = at.comparisons[("c", "b")]
    assert comp.method == "blocks" and comp.basis.startswith("2 blocks: the noise components")
    blocks = blocks_of(pts[0], pts[1:])[("c", "b")]
    var = 2 * noise.between.var / 2 + noise.paired.var / (3 * 2)
    assert math.isclose(math.log(comp.interval.high / comp.interval.low) / 2,
                        float(__import__("scipy").stats.t.ppf(1 - comp.level, comp.interval.df)) * math.sqrt(var),
                        rel_tol=1e-9)
    assert math.isclose(comp.ratio, math.exp(np.mean([np.log(b).mean() for b in blocks])), rel_tol=1e-9)
    if comp.verdict == "undecided":
        assert comp.settle(short=True) == "more blocks"


def test_one_block_stays_the_paired_comparison_of_today() -> None:
    pts = _points([1.0], 1.25, other=False)
    assert blocks_of(pts[0], pts[1:]) == {}
    (at,) = analyse(pts, noise=known_noise(0.0, 0.0, "test")).at
    assert at.comparisons[("c", "b")].method == "paired" and at.comparisons[("c", "b")].basis is None


def test_a_block_measured_again_replaces_only_its_own_pairs() -> None:
    record = BenchRecord.of_runs("b", [_run(100, 1, "c"), _run(101, 2, "c"), _run(99, 2, "d")])
    again = without_pair(record, "c", 2)
    assert [(r.pair, r.start) for r in again.runs] == [("c", 1), ("d", 2)]
    assert [(r.pair, r.start) for r in without_pair(record, "c").runs] == [("d", 2)]


def test_the_expected_precision_narrows_with_blocks() -> None:
    noise = known_noise(0.02, 0.04, "profile")
    widths = [block_half_width(noise, j, 4) for j in (3, 6, 12)]
    assert widths == sorted(widths, reverse=True) and widths[-1] < 0.05 < widths[0]
    # 2 blocks lean on components taken as known here; 3 pay for estimating the spread on 2 df
    assert block_half_width(noise, 2, 4) < widths[0]


@pytest.mark.parametrize("keys, words", [
    ({"matrix": {"draft": ["none"], "bench.max_concurrency": [1]}}, ["design: interleaved", "e.g. draft: [none"]),
    ({"repeats": "auto"}, ["starts: 3 fixes the back-to-back blocks", "repeats is auto"]),
])
def test_blocks_that_cannot_be_are_refused_in_one_line(cli, tmp_path, keys, words) -> None:
    book = tmp_path / "b.yaml"
    book.write_text(yaml.safe_dump({"name": "b", "overrides": ["target=tiny", "memory=cpu", "bench=random_tiny"],
                                    "steps": [{**SWEEP, **keys}]}))
    done = cli("run", str(book), "--dry-run", "--runs-dir", str(tmp_path / "runs"),
               env={"VLLM_CPU_OMP_THREADS_BIND": "0-1"})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert all(w in lines[0] for w in words), lines[0]


def test_a_later_block_measures_pairs_tagged_with_its_block(tmp_path, monkeypatch) -> None:
    """The bench step of block 2, with the one function that measures a run replaced by one that
    appends a run as ``serving.benchmark.run_more`` records it: pairs, no speculation first, both
    warmed up on their fresh servers, every run tagged with block 2, no speculation's with the
    point; an earlier attempt's runs of block 2 replaced, block 1's kept."""
    import contextlib
    from types import SimpleNamespace

    from llama4spec.runbook.steps import bench
    from llama4spec.serving import benchmark

    calls = []

    def run_more(cfg, url, files, record, *, label, start, warmup, pair=None, **_):
        calls.append((label, start, warmup, pair))
        run = BenchRecord(label=label, returncode=0, result={"output_throughput": 90.0 + start, "completed": 8},
                          start=start, pair=pair)
        runs = [] if record is None else (record.runs or [record])
        out = BenchRecord.of_runs(label, [*runs, run])
        out.write(files.record)
        return out

    monkeypatch.setattr(benchmark, "run_more", run_more)
    plan = _plan(tmp_path, monkeypatch, warmup=2, gap_s=0.0)
    p = next(q for q in plan.steps if q.kind == "bench" and q.step.keys.pair_with and q.step.keys.start == 2)
    point, base = plan.get(p.step.keys.adds_to), plan.get(p.step.keys.pair_with)
    BenchRecord.of_runs(point.id, [_run(100, 1), _run(101, 1), _run(50, 2)]).write(point.artifacts["record"])
    BenchRecord.of_runs(base.step.keys.adds_to, [_run(80, 1, point.id), _run(81, 1, point.id),
                                                 _run(40, 2, point.id), _run(82, 2, "other")]).write(
        base.artifacts["record"])
    live = SimpleNamespace(count=None, line=None)
    run = SimpleNamespace(environ={}, benches=None, plan=plan, say=lambda *a: None, output=SimpleNamespace(
        bench=lambda *a: None), keep_result=lambda *a: None, server=lambda sid: SimpleNamespace(alive=lambda: True),
        progress=SimpleNamespace(verbose=False, activity=lambda what: contextlib.nullcontext(live)))
    bench.execute(run, p)
    b, c = base.step.keys.adds_to, point.id
    assert calls == [(b, 2, 2, c), (c, 2, 2, None), (b, 2, 0, c), (c, 2, 0, None)]
    mine = bench_record.read(point.artifacts["record"])
    assert [(r.start, r.figure("output_throughput")) for r in mine.runs] == [(1, 100.0), (1, 101.0), (2, 92.0), (2, 92.0)]
    theirs = bench_record.read(base.artifacts["record"])
    assert [(r.pair, r.start) for r in theirs.runs] == [(c, 1), (c, 1), ("other", 2), (c, 2), (c, 2)]


# -- repeats: auto: blocks added one at a time ------------------------------------------------------

AUTO = {"repeats": "auto", "starts": 1, "min_repeats": 2, "max_repeats": 5,
        "matrix": {"draft": ["none", "tiny_eagle"], "lookahead": [3], "bench.max_concurrency": [1, 4]}}


def test_auto_blocks_gate_every_block_after_min_repeats(tmp_path, monkeypatch) -> None:
    from llama4spec.sweep.gates import MoreBlocks
    from llama4spec.sweep.rule import BLOCK_RUNS

    plan = _plan(tmp_path, monkeypatch, **AUTO)
    serves = [p for p in plan.steps if p.kind == "serve"]
    assert len(serves) == 2 * 5  # at most max_repeats blocks of the one candidate
    gates = [p.step.keys.gate for p in serves]
    assert [type(g).__name__ if g else None for g in gates] == [None] * 4 + ["MoreBlocks", None] * 3
    assert [g.block for g in gates if isinstance(g, MoreBlocks)] == [3, 4, 5]
    assert all(p.step.keys.repeats == BLOCK_RUNS for p in plan.steps if p.kind == "bench")
    design = next(r for r in plan.to_record() if r["id"] == "sweep")["design"]
    assert design["blocks"]["blocks"] == "auto" and design["blocks"]["runs"] == BLOCK_RUNS
    assert (design["min_blocks"], design["max_blocks"], design["confidence"]) == (2, 5, 0.95)


def _blocks_measured(plan, ratios: dict[int, list[float]], k: int = 3) -> None:
    """Records of the blocks measured so far: no speculation at 100 a run (drifting by block), the
    candidate at ``ratios[c][j - 1]`` times it in block j at concurrency c (a little spread per pair)."""
    points = plan.get("sweep").step.expanded.points
    for c, by_block in ratios.items():
        base, cand = f"{BASE}-k3-c{c}", f"sweep-tiny_eagle-k3-c{c}"
        assert base in points and cand in points
        base_runs, cand_runs = [], []
        for j, ratio in enumerate(by_block, 1):
            for i in range(k):
                y = 100.0 * (1 + 0.05 * j) * (1 + 0.01 * i)
                base_runs.append(_run(y, j, cand, c))
                cand_runs.append(_run(y * ratio * (1 + 0.002 * (i - 1)), j, None, c))
        BenchRecord.of_runs(base, base_runs).write(plan.get(base).artifacts["record"])
        BenchRecord.of_runs(cand, cand_runs).write(plan.get(cand).artifacts["record"])


def _gate(plan, block: int):
    return next(p for p in plan.steps if p.kind == "serve" and p.step.keys.gate is not None
                and p.step.keys.gate.block == block)


def test_a_further_block_starts_only_while_a_comparison_is_open(tmp_path, monkeypatch) -> None:
    plan = _plan(tmp_path, monkeypatch, **AUTO)
    third = _gate(plan, 3)
    assert third.step.keys.gate.missing_input(plan, third) == "not started: its earlier blocks measured none of its points"
    # clearly faster at both concurrencies after 3 blocks: a 4th is not started, and it says why
    _blocks_measured(plan, {1: [1.5, 1.52, 1.49], 4: [1.3, 1.31, 1.29]})
    fourth = _gate(plan, 4)
    why = fourth.step.keys.gate.missing_input(plan, fourth)
    assert why.startswith("not started: decided against no speculation at every client setting after 3 blocks")
    assert "faster at concurrency 1" in why and "faster at concurrency 4" in why
    # open at concurrency 4 (blocks that disagree): started, though concurrency 1 is decided
    _blocks_measured(plan, {1: [1.5, 1.52, 1.49], 4: [1.3, 0.8, 1.05]})
    assert fourth.step.keys.gate.missing_input(plan, fourth) is None
    # equal within a 2% margin at both: equivalence is decided too
    _blocks_measured(plan, {1: [1.0, 1.0005, 0.9995], 4: [1.0, 0.9995, 1.0005]})
    assert "equivalent within +-2%" in fourth.step.keys.gate.missing_input(plan, fourth)


def test_the_report_decides_auto_blocks_by_the_rule_the_gate_used(tmp_path, monkeypatch) -> None:
    from llama4spec.runbook.measured import collect_points
    from llama4spec.sweep.report import block_rule_of

    plan = _plan(tmp_path, monkeypatch, **AUTO)
    _blocks_measured(plan, {1: [1.5, 1.52, 1.49], 4: [1.3, 0.8, 1.05]})
    design = design_of(plan.get("sweep").step)
    rule = block_rule_of(design)
    assert rule == (2, 5, 0.95)
    points, _ = collect_points(plan, plan.get("sweep").step.expanded.points)
    fixed, looked = (analyse(points, known_noise(0.05, 0.05, "t"), block_rule=r) for r in (None, rule))
    for a, b in zip(fixed.at, looked.at):
        (f,), (s,) = ([r.comparison for r in x.rows] for x in (a, b))
        assert s.basis.endswith("a look after each block from 2") and s.interval.df == f.interval.df == 2
        assert s.level < f.level  # the look's share of alpha: a wider interval than a fixed design's
        assert s.interval.low <= f.interval.low and s.interval.high >= f.interval.high
    assert block_rule_of({"min_blocks": 3, "max_blocks": 2}) is None and block_rule_of({}) is None


def test_anytime_p_values_only_fall_as_blocks_arrive() -> None:
    from llama4spec.stats.looks import block_look

    rng = np.random.default_rng(2)
    blocks = [list(np.exp(rng.normal(0.1 + 0.05 * rng.normal(), 0.03, 3))) for _ in range(8)]
    ups = [block_look(blocks[:n], 3, 8)[0].up for n in range(3, 9)]
    assert all(b <= a for a, b in zip(ups, ups[1:])) and ups[-1] < 0.01
    look, basis = block_look(blocks, 3, 8, blocks_b=[[x * 1.1 for x in b] for b in blocks])
    assert look.down < 0.05 and basis.startswith("8 blocks a side: the spread of their block means")
    with pytest.raises(ValueError):
        block_look(blocks[:2], 3, 8)


def test_auto_blocks_with_starts_are_refused_in_one_line(cli, tmp_path) -> None:
    book = tmp_path / "b.yaml"
    book.write_text(yaml.safe_dump({"name": "b", "overrides": ["target=tiny", "memory=cpu", "bench=random_tiny"],
                                    "steps": [{**SWEEP, **AUTO, "starts": 3}]}))
    done = cli("run", str(book), "--dry-run", "--runs-dir", str(tmp_path / "runs"), env={"VLLM_CPU_OMP_THREADS_BIND": "0-1"})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "starts: 3 fixes the back-to-back blocks" in lines[0] and "drop starts" in lines[0]


def test_a_profile_with_costs_sets_the_pairs_a_block(tmp_path, monkeypatch) -> None:
    """Kalibera and Jones' rule for blocks: K = ceil(sqrt((start pair / run pair) x paired / (2 between))),
    here sqrt((80 / 16) x 2 x 0.05^2 / (2 x 0.03^2)) = 3.7 -> 4 pairs, on every block bench step."""
    import json

    from llama4spec.stats.noise import prior
    from llama4spec.stats.profile import Profile, profile_json
    from llama4spec.config.compose import compose_config
    from llama4spec.runbook.noise_prior import this_machine

    fp = this_machine(compose_config(["target=tiny", "memory=cpu", "bench=random_tiny"]).cfg)
    profile = Profile(prior(0.03, 0.05, "x", between_df=5, within_df=18), 40.0, 8.0, fp, "sequential", 6, 4)
    path = tmp_path / "noise.json"
    path.write_text(json.dumps(profile_json(profile)))
    plan = _plan(tmp_path, monkeypatch, **AUTO, noise=str(path))
    expected = math.ceil(math.sqrt((80 / 16) * 2 * 0.05 ** 2 / (2 * 0.03 ** 2)))
    assert expected == 4
    assert {p.step.keys.repeats for p in plan.steps if p.kind == "bench"} == {expected}
    design = design_of(plan.get("sweep").step)
    assert design["blocks"]["runs"] == expected and design["blocks"]["runs_why"].startswith("4 runs a block")
    fixed = _plan(tmp_path, monkeypatch, noise=str(path))  # a fixed design keeps its repeats
    assert {p.step.keys.repeats for p in fixed.steps if p.kind == "bench"} == {2}


# -- design: auto (the default) ---------------------------------------------------------------------

def _scout(tmp_path: Path, *overrides: str, **keys):
    from tests.helpers import REPO

    from tests.helpers import scout_blocks_text

    data = yaml.safe_load(scout_blocks_text())
    data["steps"][0].update(keys)
    data["steps"] = data["steps"][:1]  # the sweep alone
    path = tmp_path / f"scout-{len(list(tmp_path.glob('*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(data))
    plan = plan_file(path, lambda name: tmp_path / "run", list(overrides))
    return plan, design_of(plan.get("sweep").step)


def test_design_auto_takes_blocks_where_two_servers_fit_on_gpus(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    plan, design = _scout(tmp_path, repeats=2)  # a fixed repeats on the 8-GPU node: 3 blocks of 2 pairs
    assert design["asked"] == "auto" and design["design"] == "interleaved" and "auto" not in design
    assert design["blocks"]["blocks"] == 3 and design["blocks"]["runs"] == 2
    serves = [p for p in plan.steps if p.kind == "serve"]
    assert len(serves) == 2 * 5 * 3
    assert {p.env["CUDA_VISIBLE_DEVICES"] for p in serves} == {"0,1,2,3", "4,5,6,7"}
    _, design = _scout(tmp_path)  # the runbook's repeats: auto: blocks added until decided
    assert design["blocks"]["blocks"] == "auto" and (design["min_blocks"], design["max_blocks"]) == (2, 10)
    _, design = _scout(tmp_path, repeats=2, starts=4)  # starts: N blocks
    assert design["blocks"]["blocks"] == 4


@pytest.mark.parametrize("overrides, keys, why", [
    (["hardware.devices_per_node=4"], {}, "two servers of 4 GPUs each need 8 GPUs; this node has 4"),
    ([], {"revisit": True}, "revisit: true starts undecided servers again, which is the sequential design's"),
    ([], {"matrix": {"draft": ["eagle_llama4_scout"], "lookahead": [1, 3]}},
     "back-to-back blocks need one server without speculation and a candidate or more"),
])
def test_design_auto_is_sequential_elsewhere_and_says_why(tmp_path, monkeypatch, overrides, keys, why) -> None:
    from llama4spec.sweep.report import design_lines

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    plan, design = _scout(tmp_path, *overrides, **keys)
    assert design["asked"] == "auto" and design["design"] == "sequential" and design["auto"] == why
    assert design_lines(design)[0] == f"design: sequential (auto: {why})"
    assert all(p.step.keys.slot is None for p in plan.steps if p.kind == "serve")


def test_design_auto_on_the_cpu_build_is_sequential_and_the_dry_run_says_why(cli, tmp_path) -> None:
    from tests.helpers import REPO

    done = cli("run", str(REPO / "runbooks" / "tiny_cpu_sweep.yaml"), "--dry-run", "--runs-dir", str(tmp_path),
               env={"VLLM_CPU_OMP_THREADS_BIND": "0-1"})
    assert done.returncode == 0, done.stderr
    assert ("    design: sequential (auto: two servers would each get half the cores, which is another server "
            "than the one asked about)") in done.stdout.splitlines()


def test_blocks_pair_in_the_order_measured_when_a_merge_numbers_them_apart() -> None:
    """A merge numbers each place's starts on after that point's last: a candidate with 2 blocks in
    the first place and no speculation with 3 there (another candidate's) come out numbered apart."""
    base = BenchRecord.of_runs("b", [_run(100, s, "c" if s != 3 else "d") for s in (1, 1, 2, 2, 3, 3)]
                               + [_run(50, s, "c") for s in (4, 4)])
    cand = BenchRecord.of_runs("c", [_run(120, s) for s in (1, 1, 2, 2)] + [_run(60, 3), _run(60, 3)])
    pts = [point("b", {"draft": {"method": None}}, base),
           point("c", {"draft": {"method": "eagle", "name": "e"}, "lookahead": 2}, cand)]
    assert blocks_of(pts[0], pts[1:])[("c", "b")] == [[1.2, 1.2], [1.2, 1.2], [1.2, 1.2]]


def test_a_failed_run_in_a_later_block_leaves_the_earlier_blocks_counted(tmp_path: Path) -> None:
    """A run of block 4 that fails (killed, exit -15) makes the point's record fail as a whole
    (``of_runs``); the bench step writes back ``counted_only``: blocks 1-3 and block 4's complete
    pairs stay the point's, so the sweep still compares it (and block 5 can still add to it)."""
    record = BenchRecord.of_runs("c", [*(_run(130.0 * f, j) for j, f in ((1, 1.0), (2, 0.9), (3, 1.1)) for _ in range(3)),
                                       _run(128.0, 4), BenchRecord(label="x", returncode=-15, start=4)])
    assert not record.counted and record.returncode == -15
    kept = record.counted_only()
    assert kept.counted and len(kept.runs) == 10 and kept.sample_starts("output_throughput") == [1] * 3 + [2] * 3 + [3] * 3 + [4]
    kept.write(tmp_path / "record.json")
    again = bench_record.read(tmp_path / "record.json")
    assert again.counted and again.samples("output_throughput") == kept.samples("output_throughput")
    assert not BenchRecord.of_runs("c", [BenchRecord(label="x", returncode=-15, start=1)]).counted_only().counted


@pytest.mark.parametrize("keys", [{}, AUTO, {"design": "sequential"}], ids=["blocks", "auto-blocks", "starts"])
def test_a_design_read_back_from_plan_json_says_what_the_run_said(tmp_path, monkeypatch, keys) -> None:
    """report.html and a rebuilt report read the design from plan.json: back-to-back blocks (or
    starts) stay blocks there, where the nested record used to be dropped and the page called a
    blocks run interleaved."""
    import json

    from llama4spec.sweep.report import _design, design_lines

    plan = _plan(tmp_path, monkeypatch, **keys)
    said = design_lines(design_of(plan.get("sweep").step))
    step = json.loads(json.dumps(next(r for r in plan.to_record() if r["id"] == "sweep")))
    assert said and design_lines(_design(step)) == said
    assert any(line.startswith(("design: back-to-back blocks", "starts: ")) for line in said)


def test_a_hostile_nested_design_record_is_read_bounded() -> None:
    from llama4spec.sweep.report import _design, design_lines

    step = {"design": {"design": "interleaved", "asked": "interleaved",
                       "blocks": {"blocks": 3, "runs": 2, "deep": {"x": 1}, "order": [1, None, "x" * 300, "ok"]},
                       "starts": {"starts": 2, "order": "not a list"}, "other": {"a": 1}}}
    design = _design(step)
    assert design["blocks"] == {"blocks": 3, "runs": 2, "order": ["ok"]} and design["starts"] == {"starts": 2, "order": []}
    assert "other" not in design and design_lines(design)[0].endswith("Order: ok")


# -- blocks between any two settings: an A/A of a server knob ------------------------------------

AA = {"matrix": {"draft": ["none"], "memory.max_num_batched_tokens": [2048, 2049], "bench.max_concurrency": [4]},
      "starts": 4}


def test_two_settings_without_speculation_are_paired_in_blocks_the_first_the_reference(tmp_path, monkeypatch) -> None:
    plan = _plan(tmp_path, monkeypatch, **AA)
    serves = [p for p in plan.steps if p.kind == "serve"]
    assert len(serves) == 8  # 4 blocks of both servers
    tokens = [p.composed.cfg.memory.max_num_batched_tokens for p in serves]
    assert tokens == [2048, 2049] * 4  # the reference started first in every block, the other beside it
    design = design_of(plan.get("sweep").step)
    assert design["design"] == "interleaved" and not design.get("fallback")


def test_an_aa_in_blocks_is_decided_on_the_blocks_own_spread() -> None:
    """The second setting, no faster (ratio 1 with block offsets and drift shared by both servers of a
    block), compared with the first on the blocks: equivalent within the margin or undecided, never
    faster or slower; 1.2x faster: declared faster on 4 blocks' own spread."""
    def aa(ratio: float):
        base_runs, other_runs = [], []
        rng = np.random.default_rng(7)
        for j, off in enumerate([1.0, 0.6, 1.3, 0.8], 1):
            for _ in range(3):
                drift = float(np.exp(rng.normal(0, 0.03)))
                base_runs.append(_run(100 * off * drift, j, "o"))
                other_runs.append(_run(100 * ratio * off * drift * float(np.exp(rng.normal(0, 0.005))), j))
        return [point("b", {"draft": {"method": None}, "memory": {"max_num_batched_tokens": 2048}},
                      BenchRecord.of_runs("b", base_runs)),
                point("o", {"draft": {"method": None}, "memory": {"max_num_batched_tokens": 2049}},
                      BenchRecord.of_runs("o", other_runs))]

    (at,) = analyse(aa(1.0), noise=known_noise(0.2, 0.2, "test"), margin=0.02).at
    (row,) = at.others
    assert row.comparison.method == "blocks" and row.comparison.basis == "4 blocks' own spread (3 df)"
    assert row.comparison.verdict in ("equivalent", "undecided") and 0.98 < row.comparison.ratio < 1.02
    (at,) = analyse(aa(1.2), noise=known_noise(0.2, 0.2, "test")).at
    assert at.others[0].comparison.method == "blocks" and at.others[0].comparison.verdict == "faster"


def test_an_aa_in_blocks_added_until_decided_stops_once_equivalent(tmp_path, monkeypatch) -> None:
    plan = _plan(tmp_path, monkeypatch, **{**AUTO, "matrix": AA["matrix"]})
    points = plan.get("sweep").step.expanded.points
    (base,) = [p for p in points if "2048" in p]
    (other,) = [p for p in points if "2049" in p]
    base_runs, other_runs = [], []
    for j, ratio in enumerate([1.0, 1.0005, 0.9995], 1):
        for i in range(3):
            y = 100.0 * (1 + 0.05 * j) * (1 + 0.01 * i)
            base_runs.append(_run(y, j, other))
            other_runs.append(_run(y * ratio, j))
    BenchRecord.of_runs(base, base_runs).write(plan.get(base).artifacts["record"])
    BenchRecord.of_runs(other, other_runs).write(plan.get(other).artifacts["record"])
    fourth = _gate(plan, 4)
    assert "equivalent within +-2%" in fourth.step.keys.gate.missing_input(plan, fourth)


def _two_measured(plan, ratios: dict[int, tuple[list[float], list[float]]]) -> None:
    """Records of 3 blocks of both candidates (k=1, k=3): no speculation at 100 a run drifting by
    block, each candidate at its ratio of it in block j; no speculation's runs of each block tagged
    with the candidate's point they were paired with."""
    points = plan.get("sweep").step.expanded.points
    for c, (k1, k3) in ratios.items():
        base = next(pid for pid in points if pid.startswith(BASE) and pid.endswith(f"-c{c}"))
        base_runs = []
        for k, by_block in ((1, k1), (3, k3)):
            cand, cand_runs = f"sweep-tiny_eagle-k{k}-c{c}", []
            for j, ratio in enumerate(by_block, 1):
                for i in range(2):
                    y = 100.0 * (1 + 0.05 * j) * (1 + 0.01 * i)
                    base_runs.append(_run(y, j, cand, c))
                    cand_runs.append(_run(y * ratio * (1 + 0.002 * (i - 1)), j, None, c))
            BenchRecord.of_runs(cand, cand_runs).write(plan.get(cand).artifacts["record"])
        BenchRecord.of_runs(base, base_runs).write(plan.get(base).artifacts["record"])


def test_a_block_goes_to_the_leader_and_the_runner_up_while_the_best_is_open(tmp_path, monkeypatch) -> None:
    plan = _plan(tmp_path, monkeypatch, **{**AUTO, "matrix": {**AUTO["matrix"], "lookahead": [1, 3]}})

    def gate(k: int):  # k's 4th block
        p = next(p for p in plan.steps if p.kind == "serve" and p.step.keys.gate is not None
                 and p.step.keys.gate.block == 4 and f"sweep-tiny_eagle-k{k}-c1" in p.step.keys.gate.candidate)
        return p.step.keys.gate.missing_input(plan, p)

    # both decided faster than no speculation; k=3 ahead of k=1 by 1%, undecided: both get a block
    close = ([1.5, 1.52, 1.49], [1.52, 1.55, 1.50])
    _two_measured(plan, {1: close, 4: close})
    assert gate(1) is None and gate(3) is None
    # k=3 clearly the best: neither question is open, and the reason names the best
    apart = ([1.5, 1.52, 1.49], [3.0, 3.05, 2.98])
    _two_measured(plan, {1: apart, 4: apart})
    for k in (1, 3):
        why = gate(k)
        assert why.startswith("not started: decided against no speculation at every client setting after 3 blocks")
        assert "not in an open contest for the best (best at concurrency 1: " in why and "k=3" in why
