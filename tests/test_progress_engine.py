"""Live progress on the real engine: ``llama4spec serve`` shows the start-up phases it reads from
vLLM's log, in order, one line each when its output is not a terminal (one server start)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llama4spec.serving.process import is_healthy
from tests.helpers import free_port, sessions_below, wait_gone

pytestmark = pytest.mark.engine

# What a tiny CPU server goes through (no CUDA graphs on CPU), each line as printed without a terminal.
ELAPSED = r"\((?:\d+ min )?\d+ s\)"  # "(12 s)", or "(1 min 20 s)" on a loaded machine
PHASE_LINES = [r"starting; log: \S+server\.log", rf"starting the engine {ELAPSED}", rf"loading weights {ELAPSED}",
               rf"compiling / warming up {ELAPSED}", rf"starting the API server {ELAPSED}",
               r"ready at http://127\.0\.0\.1:\d+ after \d+ s"]


def test_serve_shows_start_up_phases_in_order(tmp_path: Path, tiny_dir) -> None:
    port = free_port()
    stdout, stderr = tmp_path / "serve.out", tmp_path / "serve.err"
    with open(stdout, "w") as out, open(stderr, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "llama4spec", "serve", f"serve.port={port}"], cwd=tmp_path,
                                stdout=out, stderr=err, env={**os.environ, "COLUMNS": "160"}, start_new_session=True)
    sessions: set[int] = set()
    try:
        deadline = time.monotonic() + 600
        while not (is_healthy(f"http://127.0.0.1:{port}", timeout_s=2) and "serving" in stdout.read_text()):
            assert proc.poll() is None, f"serve exited with {proc.returncode}:\n{stdout.read_text()}{stderr.read_text()}"
            assert time.monotonic() < deadline, "the server did not become healthy within 600 s"
            sessions = sessions_below(proc.pid) or sessions
            time.sleep(0.5)
        sessions = sessions_below(proc.pid) or sessions
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=120) == 130
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        wait_gone(sessions, timeout=30)
    text = stdout.read_text()
    where = []
    for pattern in PHASE_LINES:
        found = re.search(rf"^ +{pattern}$", text, re.MULTILINE)
        assert found, f"no line /{pattern}/ in:\n{text}"
        where.append(found.start())
    assert where == sorted(where), f"phases out of order:\n{text}"
    assert "\x1b[" not in text  # not a terminal: plain lines, no spinner
