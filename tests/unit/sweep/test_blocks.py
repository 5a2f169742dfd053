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

from llama4spec.analysis.model import analyse, blocks_of, server_starts, sweep_noise
from llama4spec.analysis.noise import block_half_width, prior as known_noise
from llama4spec.analysis.points import point
from llama4spec.results.bench import BenchRecord, without_pair
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.sweep.design_starts import rounds

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
    assert order == expected == plan.get("sweep").step.keys.start_order
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
    points = plan.get("sweep").step.keys.points
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
    assert other.get("sweep").step.keys.start_order != order or rounds(2, 3, 1) == rounds(2, 3, 4)


def test_the_dry_run_describes_blocks_crossover_order_and_precision(cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1")
    plan = _plan(tmp_path, monkeypatch)
    path = next(tmp_path.glob("*.yaml"))
    done = cli("run", str(path), "--dry-run", "--runs-dir", str(tmp_path / "runs"),
               env={"VLLM_CPU_OMP_THREADS_BIND": "0-1"})
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "design: back-to-back blocks" in x)
    assert "3 blocks" in line and "2 pairs" in line and "crossed over" in line and "order_seed 4" in line
    assert line.endswith("Order: " + ", ".join(plan.get("sweep").step.keys.start_order))
    assert "expected precision: a speedup against no speculation from 3 blocks of 2 pairs" in done.stdout
    assert "pairs of block 2, each a run of" in done.stdout


def _run(x: float, start: int, pair: str | None = None) -> BenchRecord:
    return BenchRecord(label="x", returncode=0, pair=pair, start=start,
                       result={"output_throughput": x, "completed": 16, "max_concurrency": 4})


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
    noise = sweep_noise(pts, known_noise(0.05, 0.05, "prior", 10, 10))
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
    ({"repeats": "auto"}, ["repeats is auto"]),
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
