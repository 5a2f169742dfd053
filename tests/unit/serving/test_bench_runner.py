"""The benchmark worker: one process runs every ``vllm bench serve`` of a run (vLLM's imports paid
once), each run's output in its own log, its exit code as a process of its own would give; an
interruption or a dead worker costs only the run in flight. Real vLLM benchmark code, no engine: a
stand-in HTTP server that answers ``/health`` and never a request keeps a run going."""

from __future__ import annotations

import http.server
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from llama4spec.serving.bench_runner import BenchRunner
from llama4spec.serving.process import group_alive


class _Hangs(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_POST(self) -> None:
        time.sleep(600)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hanging_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hangs)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _flags(url: str, model: Path) -> list[str]:
    return ["--backend", "openai", "--base-url", url, "--endpoint", "/v1/completions", "--model", str(model),
            "--dataset-name", "random", "--input-len", "4", "--output-len", "4", "--num-prompts", "1",
            "--label", "hangs", "--disable-tqdm"]


def _started(log: Path) -> bool:
    """vLLM's benchmark prints its arguments when it starts."""
    return log.is_file() and "label='hangs'" in log.read_text()


def _until(condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_one_worker_runs_each_benchmark_into_its_own_log_and_survives_interruptions(
        tmp_path: Path, tiny_dir: Path, hanging_url: str) -> None:
    logs = [tmp_path / f"run{i}" / "bench.log" for i in range(4)]
    with BenchRunner() as runner:
        assert runner.run(["--no-such-flag"], {}, logs[0]) == 2  # argparse's code, as `vllm bench serve` exits
        first = runner.proc.pid
        assert runner.run(["--num-prompts", "x"], {}, logs[1]) == 2
        assert runner.proc.pid == first  # the same worker: vLLM imported once
        assert runner.last_cpu_s is not None and runner.last_cpu_s >= 0  # the load generator's CPU time, per run
        assert "unrecognized arguments: --no-such-flag" in logs[0].read_text()
        assert "--no-such-flag" not in logs[1].read_text() and "invalid int value" in logs[1].read_text()

        ticks: list[float] = []

        def interrupt() -> None:  # Ctrl-C while the benchmark waits on the server
            ticks.append(time.monotonic())
            if _started(logs[2]) and len(ticks) >= 3:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            runner.run(_flags(hanging_url, tiny_dir / "target"), {}, logs[2], tick=interrupt, interval_s=0.2)
        assert runner.proc is None and len(ticks) >= 3  # live progress ticked while it ran
        _until(lambda: not group_alive(first))  # the run in flight went with its worker

        second: list[int] = []

        def kill() -> None:  # the worker dies during a run
            if _started(logs[3]):
                second.append(runner.proc.pid)
                os.kill(runner.proc.pid, signal.SIGKILL)

        assert runner.run(_flags(hanging_url, tiny_dir / "target"), {"LLAMA4SPEC_TEST": "1"}, logs[3], tick=kill,
                          interval_s=0.2) == -signal.SIGKILL  # the code of the signal that ended it
        assert second[0] != first  # the run after an interruption got a worker of its own
        assert runner.proc is None  # and the next one gets a new worker too
