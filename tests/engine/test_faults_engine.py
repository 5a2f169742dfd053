"""Faults on the real engine: the tool killed (SIGINT, SIGKILL) during a server's start-up and
interrupted during a benchmark. In every case no process is left, the port is free within
seconds, status.json says what finished and what did not, and earlier results are kept. The
server killed during a benchmark, the tool SIGKILLed between steps, a crash mid-write, a full disk
and SIGTERM during report are the fault campaign's (test_fault_campaign_engine.py); a failing step
blocking what needs it is tested without an engine (tests/unit/runbook/test_failures_run.py).

SIGTERM and SIGHUP take SIGINT's unwinding through one code path (``sigterm_unwinds``): they are
tested with a stand-in server in ``tests/unit/serving/test_signals_unwind.py``, and so is SIGKILL
during a benchmark. SIGINT is the KeyboardInterrupt path and SIGKILL the lifeline path: both stay
here at a real engine's start-up, SIGINT during a real benchmark too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO, alive_in, bench_started, free_port, listening, run_dir_of, sessions_below, wait_gone

pytestmark = pytest.mark.engine

SIGNALS = {"SIGINT": (signal.SIGINT, 130), "SIGKILL": (signal.SIGKILL, -9)}


def _runbook(tmp_path: Path, port: int) -> Path:
    """A server, a short benchmark that finishes, a long one to interrupt, then the stop."""
    path = tmp_path / "faults.yaml"
    path.write_text(f"""
name: faults
overrides: [draft=none, serve.port={port}, bench.input_len=16]
steps:
  - {{id: server, kind: serve}}
  - {{id: short, kind: bench, server: server, overrides: [bench.num_prompts=4, bench.output_len=8]}}
  - {{id: long, kind: bench, server: server, overrides: [bench.num_prompts=400, bench.output_len=256,
      bench.max_concurrency=2], extra_args: [--ignore-eos]}}
  - {{id: stop, kind: stop, server: server}}
""")
    return path


def _wait_for(condition, proc: subprocess.Popen, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within {timeout:.0f} s"
        time.sleep(0.2)


def _engine_started(proc: subprocess.Popen) -> bool:
    return any(len(alive_in({sid})) >= 2 for sid in sessions_below(proc.pid))


def _long_bench_running(proc: subprocess.Popen, runs: Path) -> bool:
    return bench_started(runs, "long")


def _start(tmp_path: Path, port: int) -> tuple[subprocess.Popen, Path]:
    runs = tmp_path / "runs"
    out = open(tmp_path / "cli.out", "w")
    proc = subprocess.Popen([sys.executable, "-m", "llama4spec", "run", str(_runbook(tmp_path, port)),
                             "--runs-dir", str(runs)], cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    return proc, runs


def _finish(proc: subprocess.Popen, sig: int, sessions: set[int]) -> int:
    try:
        os.kill(proc.pid, sig)
        return proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        wait_gone(sessions, timeout=30)


def _assert_nothing_left(sessions: set[int], port: int) -> None:
    assert not wait_gone(sessions, timeout=20), "a server, engine or benchmark process outlived the tool"
    deadline = time.monotonic() + 10
    while listening(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not listening(port)


@pytest.mark.parametrize("name", list(SIGNALS))
def test_tool_killed_during_server_start_up(name: str, tmp_path: Path, tiny_dir) -> None:
    sig, code = SIGNALS[name]
    port = free_port()
    proc, runs = _start(tmp_path, port)
    _wait_for(lambda: _engine_started(proc), proc, "engine process")
    sessions = sessions_below(proc.pid)
    assert _finish(proc, sig, sessions) == code
    _assert_nothing_left(sessions, port)
    status = json.loads((run_dir_of(runs) / "status.json").read_text())
    steps = {s["id"]: s["status"] for s in status["steps"]}
    if sig == signal.SIGKILL:  # nothing can run after SIGKILL: the file shows where it stood
        assert status["status"] == "running" and steps["server"] == "running"
    else:
        assert status["status"] == "interrupted" and steps["server"] == "interrupted"
        assert steps["short"] == steps["long"] == "skipped"
        assert "Traceback" not in (tmp_path / "cli.out").read_text()


# SIGKILL during a benchmark: the lifeline path of start-up above, with the benchmark's process too;
# tested around a stand-in server in tests/unit/serving/test_signals_unwind.py.
@pytest.mark.parametrize("name", ["SIGINT"])
def test_tool_killed_during_a_benchmark_keeps_earlier_results(name: str, tmp_path: Path, tiny_dir) -> None:
    sig, code = SIGNALS[name]
    port = free_port()
    proc, runs = _start(tmp_path, port)
    _wait_for(lambda: _long_bench_running(proc, runs), proc, "long benchmark")
    sessions = sessions_below(proc.pid)
    assert _finish(proc, sig, sessions) == code
    _assert_nothing_left(sessions, port)
    run_dir = run_dir_of(runs)
    status = json.loads((run_dir / "status.json").read_text())
    steps = {s["id"]: s for s in status["steps"]}
    assert steps["server"]["status"] == "done" and steps["short"]["status"] == "done"
    short = json.loads((run_dir / "short" / "record.json").read_text())  # the earlier result, kept
    assert short["returncode"] == 0 and short["result"]["completed"] == 4
    assert steps["short"]["result"]["completed"] == 4
    if sig == signal.SIGKILL:
        assert status["status"] == "running" and steps["long"]["status"] == "running"
    else:
        assert status["status"] == "interrupted" and steps["long"]["status"] == "interrupted"
        assert steps["stop"]["status"] == "skipped"
        assert "Traceback" not in (tmp_path / "cli.out").read_text()
