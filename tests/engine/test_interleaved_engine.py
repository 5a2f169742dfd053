"""``design: interleaved`` with real vLLM servers: the shipped runbooks/tiny_cpu_interleaved.yaml cut
to concurrency 4 and 2 back-to-back blocks (``starts: 2``) of 2 pairs of small runs. Four server
starts: block 1 no speculation on core 0 and the imperfect pair's k=2 beside it on core 1, block 2
the same two crossed over.

What must hold: each block's two servers started, on their own cores (vLLM's own log says which),
the candidate while no speculation was up, both stopped before the next block; their runs
alternate, no speculation first, each run at least gap_s after the other server's last run; no
speculation's runs are tagged with the candidate they pair with and each run with its block; the
report's speedup rests on the two blocks' means (the noise components), recomputed from the
records; acceptance comes from the candidate servers' counters; a resumed run starts no server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, run_cli

pytestmark = pytest.mark.engine

BASE, CAND = "sweep-none-k2-c4", "sweep-tiny_eagle_imperfect-k2-c4"
REPEATS, BLOCKS, GAP_S = 2, 2, 2.0


@pytest.fixture(scope="module")
def interleaved_run(tmp_path_factory, tiny_dir) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("interleaved")
    data = yaml.safe_load((REPO / "runbooks" / "tiny_cpu_interleaved.yaml").read_text())
    data["overrides"] = [o for o in data["overrides"] if not o.startswith(("bench.num_prompts", "bench.output_len",
                                                                             "serve.port"))]
    data["overrides"] += ["bench.num_prompts=8", "bench.output_len=32", "serve.port=8765"]
    data["steps"][0].update(repeats=REPEATS, starts=BLOCKS, gap_s=GAP_S)
    data["steps"][0]["matrix"]["bench.max_concurrency"] = [4]
    runbook = base / "tiny_cpu_interleaved.yaml"
    runbook.write_text(yaml.safe_dump(data, sort_keys=False))
    done = run_cli("run", str(runbook), "--runs-dir", str(base / "runs"), timeout=1200,
                   env={"VLLM_CPU_OMP_THREADS_BIND": "0-1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run_dir,) = (base / "runs" / "tiny_cpu_interleaved").iterdir()
    return runbook, run_dir


def _record(run_dir: Path, pid: str) -> dict:
    return json.loads((run_dir / pid / "record.json").read_text())


def test_two_servers_on_their_own_cores_with_runs_alternating(interleaved_run) -> None:
    _, run_dir = interleaved_run
    status = {s["id"]: s for s in json.loads((run_dir / "status.json").read_text())["steps"]}
    serves = [s for s in status.values() if s["kind"] == "serve"]
    assert [s["status"] for s in serves] == ["done"] * 2 * BLOCKS
    for server, core in (("sweep-none-k2-tiny_eagle_imperfect-k2-block1", "0"), ("sweep-tiny_eagle_imperfect-k2", "1"),
                         ("sweep-none-k2-tiny_eagle_imperfect-k2-block2", "1"),
                         ("sweep-tiny_eagle_imperfect-k2-block2", "0")):  # crossed over
        assert f"VLLM_CPU_OMP_THREADS_BIND='{core}'" in (run_dir / server / "server.log").read_text()
    for cand, base in (("sweep-tiny_eagle_imperfect-k2", "sweep-none-k2-tiny_eagle_imperfect-k2-block1"),
                       ("sweep-tiny_eagle_imperfect-k2-block2", "sweep-none-k2-tiny_eagle_imperfect-k2-block2")):
        assert status[cand]["result"]["started_with"] == base  # a block's two servers start together
        assert status[cand]["seconds"] < 0.5 * status[base]["seconds"]
    base, cand = _record(run_dir, BASE), _record(run_dir, CAND)
    blocks = [j for j in range(1, BLOCKS + 1) for _ in range(REPEATS)]
    assert [r.get("pair") for r in base["runs"]] == [CAND] * REPEATS * BLOCKS
    assert [r.get("start", 1) for r in base["runs"]] == [r.get("start", 1) for r in cand["runs"]] == blocks
    assert all("pair" not in r for r in cand["runs"])
    runs = sorted([("base", r) for r in base["runs"]] + [("cand", r) for r in cand["runs"]],
                  key=lambda x: x[1]["started"])
    assert [who for who, _ in runs] == ["base", "cand"] * REPEATS * BLOCKS
    for (_, before), (_, after) in zip(runs, runs[1:]):
        assert after["started"] >= before["started"] + before["wall_time_s"] + GAP_S - 0.05, (before, after)
    assert cand["acceptance"]["num_drafts"] > 0 and base["acceptance"] is None  # the servers' counters


def test_the_speedup_is_the_paired_interval_of_the_records(interleaved_run) -> None:
    from llama4spec.stats.noise import noise_from_record
    from llama4spec.stats.compare import compare

    runbook, run_dir = interleaved_run
    sweep = json.loads((run_dir / "sweep" / "sweep.json").read_text())
    assert sweep["design"]["design"] == "interleaved" and sweep["design"]["blocks"]["blocks"] == BLOCKS
    assert "design: back-to-back blocks" in (run_dir / "sweep" / "report.md").read_text()
    (at,) = sweep["concurrency"]
    (reported,) = at["comparisons"]
    assert reported["method"] == "blocks" and reported["basis"].startswith("2 blocks: the noise components")
    xs = [r["result"]["output_throughput"] for r in _record(run_dir, CAND)["runs"]]
    ys = [r["result"]["output_throughput"] for r in _record(run_dir, BASE)["runs"]]
    noise = noise_from_record(reported["noise"])  # the estimate the sweep's comparison says it used
    assert noise is not None and noise.between.source.startswith("hardware prior") and noise.paired is not None
    blocks = [[x / y for x, y in zip(xs[j:j + REPEATS], ys[j:j + REPEATS])] for j in range(0, len(xs), REPEATS)]
    again = compare({BASE: ys, CAND: xs}, noise=noise, blocks={(CAND, BASE): blocks},
                    margin=reported["margin"])[(reported["first"], reported["second"])]
    assert again.method == "blocks" and again.verdict == reported["verdict"]
    assert again.interval.low == pytest.approx(reported["interval"]["low"], rel=1e-9)
    assert again.interval.high == pytest.approx(reported["interval"]["high"], rel=1e-9)
    done = run_cli("run", str(runbook), "--resume", str(run_dir), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    steps = json.loads((run_dir / "status.json").read_text())["steps"]
    assert not any(s["kind"] == "serve" and s["status"] == "done" and not s.get("resumed") for s in steps), steps
