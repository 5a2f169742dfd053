"""A sweep with one broken point, end to end with real vLLM servers, then resumed.

The matrix sweeps the EAGLE draft's directory over two copies of the tiny draft: one whose
weights file is cut to a few bytes (its config.json intact, so the doctor lets it through) and a
good one, each measured at concurrency 1 and 2. The broken server dies while loading weights;
its points are skipped, the good group is measured, the report and plots are written, and the
run exits 1. Resumed with the weights restored, only the broken group runs. Three engine starts
(one of which fails while loading weights) and four short benchmarks: about 4-5 minutes here.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from llama4spec.runbook.matrix import file_label
from llama4spec.tiny.paths import tiny_path
from tests.helpers import alive_in, free_port, run_cli

pytestmark = pytest.mark.engine

WEIGHTS = "model.safetensors"


def _group(draft: Path) -> str:
    """The sweep's serve step id for one draft directory (runbook.matrix names it)."""
    return f"sweep-{file_label('draft.model', str(draft))}"


def _snapshot(run_dir: Path) -> dict:
    """What the run left, read before a resumed run rewrites it."""
    return {
        "status": json.loads((run_dir / "status.json").read_text()),
        "summary": (run_dir / "summary.md").read_text(),
        "report": (run_dir / "sweep" / "report.md").read_text(),
        "analysis": json.loads((run_dir / "sweep" / "sweep.json").read_text()),
    }


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, tiny_dir) -> dict:
    tmp = tmp_path_factory.mktemp("failures")
    good, broken = tmp / "drafts" / "good", tmp / "drafts" / "broken"
    shutil.copytree(tiny_path("draft"), good)
    shutil.copytree(tiny_path("draft"), broken)
    with open(broken / WEIGHTS, "r+b") as f:  # a few bytes of the header: config.json stays valid
        f.truncate(16)
    bad, fine = _group(broken), _group(good)
    runbook = tmp / "sweep_failures.yaml"
    runbook.write_text(f"""
name: sweep_failures
env:
  VLLM_CPU_KVCACHE_SPACE: "1"
overrides: [target=tiny, memory=cpu, bench=random_tiny, draft=tiny_eagle, lookahead=2, bench.num_prompts=4,
            bench.output_len=16, serve.port={free_port()}]
steps:
  - id: sweep
    kind: sweep
    repeats: 1
    matrix:
      draft.model: [{broken}, {good}]
      bench.max_concurrency: [1, 2]
    extra_args: [--ignore-eos]
  - id: compare
    kind: compare
    baseline: {fine}-c1
    candidate: {bad}-c1
""")
    runs = tmp / "runs"
    started = time.monotonic()
    first = run_cli("run", str(runbook), "--runs-dir", str(runs), timeout=1200)
    first_s = time.monotonic() - started
    (run_dir,) = (runs / "sweep_failures").iterdir()
    state = {"tmp": tmp, "runbook": runbook, "run_dir": run_dir, "bad": bad, "fine": fine, "broken": broken,
             "good": good, "first": first, "first_s": first_s, **_snapshot(run_dir)}
    print(f"\nsweep with a broken draft: {first_s:.0f} s wall, record {run_dir}")
    return state


def test_a_broken_draft_fails_its_group_only_and_the_report_is_written(sweep) -> None:
    first, bad, fine = sweep["first"], sweep["bad"], sweep["fine"]
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    steps = {s["id"]: s for s in sweep["status"]["steps"]}
    assert sweep["status"]["status"] == "failed"
    # the broken server: failed, with vLLM's own reason and the log tail that was printed
    server = steps[bad]
    assert server["status"] == "failed"
    assert "exited with code" in server["error"] and "during start-up" in server["error"]
    assert "SafetensorError" in server["error"], server["error"]
    assert server["log_tail"] and all(f"  | {line}" in first.stdout for line in server["log_tail"][-3:])
    assert not alive_in({server["result"]["pid"]})
    # its points and its stop: skipped, naming it; the good group after it: measured
    for sid in (f"{bad}-c1", f"{bad}-c2", f"{bad}-stop"):
        assert steps[sid]["status"] == "skipped" and steps[sid]["reason"] == f"server '{bad}' failed"
    for sid in (fine, f"{fine}-c1", f"{fine}-c2", f"{fine}-stop", "sweep"):
        assert steps[sid]["status"] == "done", steps[sid]
    assert steps[f"{fine}-c2"]["result"]["output_throughput"] > 0
    assert steps["compare"]["status"] == "skipped"
    assert steps["compare"]["reason"] == f"candidate '{bad}-c1' was skipped (server '{bad}' failed)"
    # the report over what was measured, saying why the rest is missing; the plots exist
    run_dir = sweep["run_dir"]
    for why in (f"- {bad}-c1: skipped: server '{bad}' failed", f"- {bad}-c2: skipped: server '{bad}' failed"):
        assert why in sweep["report"] and why in sweep["summary"]
    assert sorted(r["concurrency"] for r in sweep["analysis"]["concurrency"]) == [1, 2]
    for png in ("acceptance_by_position", "throughput_vs_concurrency", "speedup"):
        assert (run_dir / "sweep" / f"{png}.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "## Failures" in sweep["summary"] and f"- {bad} (serve) failed: " in sweep["summary"]
    assert f"error: step '{bad}' failed:" in first.stdout
    assert "Traceback" not in "\n".join(line for line in first.stdout.splitlines() if not line.startswith("  | "))
    assert "Traceback" not in first.stderr


def test_resume_with_the_draft_fixed_runs_only_the_broken_group(sweep) -> None:
    shutil.copy2(sweep["good"] / WEIGHTS, sweep["broken"] / WEIGHTS)
    run_dir, bad, fine = sweep["run_dir"], sweep["bad"], sweep["fine"]
    started, clock = time.monotonic(), time.time()
    again = run_cli("run", str(sweep["runbook"]), "--resume", str(run_dir), timeout=900)
    again_s = time.monotonic() - started
    print(f"\nresumed with the draft fixed: {again_s:.0f} s wall")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    status = json.loads((run_dir / "status.json").read_text())
    steps = {s["id"]: s for s in status["steps"]}
    assert status["status"] == "done" and status["resumed"] is True
    ran = sorted(sid for sid, s in steps.items() if s["status"] == "done" and not s.get("resumed"))
    assert ran == sorted([bad, f"{bad}-c1", f"{bad}-c2", f"{bad}-stop", "sweep", "compare"])
    assert all(steps[sid].get("resumed") for sid in (fine, f"{fine}-c1", f"{fine}-c2", f"{fine}-stop"))
    assert again.stdout.count("already measured in this run directory; skipped") == 4
    assert (run_dir / fine / "server.log").stat().st_mtime < clock  # the good server's log: the first run's
    report = (run_dir / "sweep" / "report.md").read_text()
    assert "not measured" not in report
    assert "## compare" in (run_dir / "summary.md").read_text()
