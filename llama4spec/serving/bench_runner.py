"""Where vLLM's serving benchmark runs: one worker process per run of the tool.

Importing vLLM's benchmark costs about 10 s here, as long as a short benchmark run itself; a sweep
makes dozens of runs. A ``BenchRunner`` keeps one worker (``python -m
llama4spec.serving.vllm_bench --worker``) that imports it once and then runs each ``vllm bench
serve`` in turn, each run's output appended to that run's log. The worker leads its own session
and dies with this process (as every child here does), so a failure or an interruption never takes
this process or its servers with it: on any interruption during a run its whole group is stopped,
and the next run starts a new worker. A worker is reused only with the environment it was started
with.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Callable, Mapping, Sequence

from llama4spec.engine.bench_flags import BENCH_MODULE
from llama4spec.serving.process import close_stdin, spawn_piped, stop_groups, terminate_group
from llama4spec.serving.vllm_bench import WORKER_FLAG


class BenchRunner:
    """Runs ``vllm bench serve FLAGS`` in one long-lived worker; a context manager that stops it."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.env: dict[str, str] | None = None
        self.errors: IO[bytes] | None = None  # the worker's own stderr (its start-up, between runs)
        self.last_cpu_s: float | None = None  # the CPU time the last run took in the worker (None: unknown)

    def __enter__(self) -> BenchRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def prestart(self, env: Mapping[str, str]) -> None:
        """Start the worker now (its imports overlap whatever runs next), for runs with ``env``."""
        if self.proc is None:
            self._start(env)

    def _start(self, env: Mapping[str, str]) -> None:
        self.errors = tempfile.TemporaryFile()
        self.proc = spawn_piped([sys.executable, "-m", BENCH_MODULE, WORKER_FLAG], env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=self.errors)
        self.env = dict(env)

    def close(self, grace_s: float = 5.0, interrupted: bool = False) -> None:
        """End the worker: the end of its input (at once SIGTERM to its group when a run was
        interrupted), then its group stopped the hard way if it lingers."""
        proc, self.proc = self.proc, None
        if proc is not None:
            stop_groups([proc], grace_s, ask=terminate_group if interrupted else close_stdin,
                        then_grace_s=None if interrupted else grace_s)
            proc.stdout.close()
        if self.errors is not None:
            self.errors.close()
            self.errors = None

    def run(self, flags: Sequence[str], env: Mapping[str, str], log_path: Path,
            tick: Callable[[], None] | None = None, interval_s: float = 1.0) -> int:
        """Run ``vllm bench serve FLAGS`` to its end, its output appended to ``log_path``; its exit
        code (negative: the signal that ended the worker). ``tick`` (live progress) is called every
        ``interval_s`` while it runs; ``last_cpu_s`` then holds the CPU time the run took."""
        self.last_cpu_s = None
        if self.proc is not None and (self.proc.poll() is not None or self.env != dict(env)):
            self.close()
        if self.proc is None:
            self._start(env)
        proc = self.proc
        log_path.parent.mkdir(parents=True, exist_ok=True)
        finished = False
        try:
            answer = self._ask(proc, {"argv": list(flags), "log": str(log_path)}, tick, interval_s)
            finished = True
        finally:
            if not finished:  # interrupted: the run in flight goes with its worker
                self.close(interrupted=True)
        if answer is None:  # the worker ended without an answer: its exit code, and what it said
            code = proc.wait()
            self._keep_errors(log_path)
            self.close()
            return code
        cpu = answer.get("cpu_s")
        if isinstance(cpu, (int, float)) and not isinstance(cpu, bool) and cpu >= 0:
            self.last_cpu_s = float(cpu)
        return int(answer["code"])

    def _ask(self, proc: subprocess.Popen, request: dict, tick: Callable[[], None] | None,
             interval_s: float) -> dict | None:
        try:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
        except OSError:  # the worker is gone
            return None
        fd, answer = proc.stdout.fileno(), b""
        while not answer.endswith(b"\n"):
            ready, _, _ = select.select([fd], [], [], interval_s)
            if not ready:
                if tick is not None:
                    tick()
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            answer += chunk
        return json.loads(answer)

    def _keep_errors(self, log_path: Path) -> None:
        if self.errors is None:
            return
        self.errors.seek(0)
        said = self.errors.read()[-20000:]
        if said:
            with open(log_path, "ab") as log:
                log.write(said)

