"""The processes of one multi-node server: the leader here, a launcher per follower.

Started together, watched together (a node that dies during start-up fails at once with its
log tail), stopped together. Each follower's launcher keeps a pipe to the host's ``lifeline``:
closing it stops the follower's whole process group over there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

from llama4spec.engine.launch import base_url
from llama4spec.multinode.plan import NodeCommand
from llama4spec.serving.process import group_alive, spawn, spawn_tethered, stop_group, wait_healthy
from llama4spec.serving.watch import ServerWatch

STOP_WAIT_S = 30.0  # a follower's lifeline gives its group 15 s after SIGTERM, then kills it


def _spawn_follower(argv: Sequence[str], env: Mapping[str, str], log_path: Path) -> subprocess.Popen:
    """Like ``spawn`` but stdin stays a pipe: the follower's lifeline lives as long as it."""
    return spawn(argv, env, log_path, stdin=subprocess.PIPE)


class Nodes:
    """A multi-node vLLM server (a context manager), used wherever a ``Server`` is.

    ``start()`` launches every node, then waits for the leader's ``/health`` while polling every
    node's process; ``stop()`` stops every node and waits for them; every node's log is kept.
    ``on_phase`` hears the start-up phases read from the leader's log, ``on_line`` every new line
    of every node's log (a follower's prefixed with its label).
    """

    def __init__(self, nodes: list[NodeCommand], *, host: str, port: int, log_paths: Sequence[Path],
                 secret_env: Mapping[str, str] | None = None, health_timeout_s: float = 900.0,
                 name: str = "server"):
        self.nodes = nodes
        self.host, self.port = host, port
        self.log_paths = [Path(p) for p in log_paths]
        self.secret_env = dict(secret_env or {})  # the leader's only (followers serve no API)
        self.health_timeout_s = health_timeout_s
        self.name = name
        self.procs: list[subprocess.Popen] = []
        self.ready_after_s: float | None = None

    @property
    def url(self) -> str:
        return base_url(self.host, self.port)

    @property
    def log_path(self) -> Path:
        return self.log_paths[0]

    @property
    def proc(self) -> subprocess.Popen | None:
        return self.procs[0] if self.procs else None

    def start(self, on_phase: Callable[[str], None] | None = None,
              on_line: Callable[[str], None] | None = None) -> "Nodes":
        started = time.monotonic()
        watch = ServerWatch(self.log_paths, on_phase, on_line,
                            labels=["" if n.leader else n.label for n in self.nodes])
        try:
            watch.start()
            for node, log in zip(self.nodes, self.log_paths):
                if node.leader:
                    self.procs.append(spawn_tethered(node.exec_argv, {**node.env, **self.secret_env}, log))
                else:
                    self.procs.append(_spawn_follower(node.exec_argv, {}, log))
            self._wait_ready(watch.tick)
            watch.ready()
        except BaseException:
            self.stop()
            raise
        self.ready_after_s = time.monotonic() - started
        return self

    def exited(self) -> tuple[NodeCommand, int, Path] | None:
        """The first node whose process has ended: (node, exit code, its log)."""
        for node, proc, log in zip(self.nodes, self.procs, self.log_paths):
            code = proc.poll()
            if code is not None:
                return node, code, log
        return None

    def _wait_ready(self, tick: Callable[[], None] | None = None) -> None:
        wait_healthy(self.url, self.name, self.health_timeout_s, self.exit_status, self.log_path, tick)

    def alive(self) -> bool:
        return bool(self.procs) and self.exited() is None

    def exit_status(self) -> tuple[str, int, Path] | None:
        """(which node, exit code, its log) once any node has exited, else None."""
        gone = self.exited()
        return None if gone is None else (f"{self.name}: {gone[0].label}", gone[1], gone[2])

    def stop(self) -> None:
        """Stop every node at once: the leader's group gets SIGTERM, each follower's lifeline its
        end of file; wait for all, then stop whatever is left the hard way."""
        for node, proc in zip(self.nodes, self.procs):
            if node.leader:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
            elif proc.stdin and not proc.stdin.closed:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        deadline = time.monotonic() + STOP_WAIT_S
        while time.monotonic() < deadline and any(p.poll() is None or group_alive(p.pid) for p in self.procs):
            time.sleep(0.2)
        for proc in self.procs:
            stop_group(proc, grace_s=5.0)

    def __enter__(self) -> "Nodes":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
