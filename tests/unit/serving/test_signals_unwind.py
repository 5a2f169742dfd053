"""SIGTERM and SIGHUP during a run, without an engine: both take one code path
(``serving.process.sigterm_unwinds`` turns them into ``SystemExit(128 + signal)``), so a stand-in
HTTP server carries them through the real planner and executor; so does SIGKILL during a
benchmark (the lifeline path: nothing of the tool runs after it). SIGINT (the KeyboardInterrupt
path) and SIGKILL at start-up are tested on the real engine in
``tests/engine/test_faults_engine.py``.

The stand-in is the serve step's command replaced in the plan: in ``start-up`` mode it never
listens (the server is still starting when the signal comes); in ``bench`` mode it answers
``/health`` and never answers a request, so vLLM's real benchmark client hangs on it."""

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

STAND_IN = r"""
import http.server, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
if mode == "start-up":
    time.sleep(100000)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
    def do_POST(self):
        time.sleep(100000)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
"""

# The planner and executor as ``llama4spec run`` drives them, with the serve step's command replaced.
DRIVER = r"""
import sys
from pathlib import Path
from rich.console import Console
from llama4spec.runbook import execute
from llama4spec.runbook.plan import plan_file
runbook, runs, mode, port, stand_in = sys.argv[1:6]
plan = plan_file(Path(runbook), lambda name: Path(runs) / name / "run")
server = plan.get("server")
server.exec_argv = [sys.executable, "-c", stand_in, mode, port]
sys.exit(execute.run(plan, Console()))
"""

RUNBOOK = """
name: signals
overrides: [draft=none, serve.port={port}, bench.input_len=16]
steps:
  - {{id: server, kind: serve}}
  - {{id: long, kind: bench, server: server, overrides: [bench.num_prompts=4, bench.output_len=8]}}
  - {{id: stop, kind: stop, server: server}}
"""

SIGNALS = {"SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP}
CASES = [(name, mode) for name in SIGNALS for mode in ("start-up", "bench")] + [("SIGKILL", "bench")]


def _wait(condition, proc: subprocess.Popen, what: str, out: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the run ended before {what}:\n{out.read_text()}"
        assert time.monotonic() < deadline, f"no {what} within {timeout:.0f} s:\n{out.read_text()}"
        time.sleep(0.2)


@pytest.mark.parametrize("name,mode", CASES)
def test_signal_during_a_run_leaves_no_child(name: str, mode: str, tmp_path: Path, tiny_dir) -> None:
    sig, port = getattr(signal, name), free_port()
    runbook, runs, out = tmp_path / "signals.yaml", tmp_path / "runs", tmp_path / "driver.out"
    runbook.write_text(RUNBOOK.format(port=port))
    with open(out, "w") as log:
        proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(runbook), str(runs), mode, str(port), STAND_IN],
                                cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if mode == "start-up":  # the stand-in server is running and not yet healthy
            _wait(lambda: bool(sessions_below(proc.pid)), proc, "server process", out)
            time.sleep(1)
        else:  # vLLM's benchmark client is waiting on the stand-in
            _wait(lambda: bench_started(runs, "long"), proc, "benchmark", out)
            time.sleep(1)
        sessions = sessions_below(proc.pid)
        assert sessions, "the server and the benchmark lead sessions of their own"
        os.kill(proc.pid, sig)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == (-sig if sig == signal.SIGKILL else 128 + sig), out.read_text()
    assert not wait_gone(sessions, timeout=20), "a server or benchmark process outlived the run"
    assert not alive_in(sessions)
    assert not listening(port)  # nothing listens
    status = json.loads((run_dir_of(runs) / "status.json").read_text())
    steps = {s["id"]: s["status"] for s in status["steps"]}
    if sig == signal.SIGKILL:  # nothing can run after SIGKILL: the file shows where it stood
        assert status["status"] == "running" and steps["long"] == "running" and steps["server"] == "done"
        return
    assert status["status"] == "interrupted"
    if mode == "start-up":
        assert steps == {"server": "interrupted", "long": "skipped", "stop": "skipped"}
    else:
        assert steps == {"server": "done", "long": "interrupted", "stop": "skipped"}
    assert "Traceback" not in out.read_text()
