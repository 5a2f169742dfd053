"""A vLLM OpenAI-compatible server on this machine, owned by this process."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

from llama4spec.engine.launch import base_url
from llama4spec.serving.process import spawn_tethered, stop_group, wait_healthy
from llama4spec.serving.watch import ServerWatch

OnText = Callable[[str], None]


class ServerProcess(Protocol):
    """What the executor needs of a server, single-node (``Server``) or multi-node (``Nodes``)."""

    name: str
    ready_after_s: float | None

    @property
    def url(self) -> str: ...

    @property
    def log_path(self) -> Path: ...

    @property
    def proc(self) -> subprocess.Popen | None: ...

    def start(self, on_phase: OnText | None = None, on_line: OnText | None = None) -> "ServerProcess": ...

    def alive(self) -> bool: ...

    def exit_status(self) -> tuple[str, int, Path] | None: ...

    def stop(self) -> None: ...


class Server:
    """A vLLM OpenAI-compatible server owned by this process (a context manager).

    ``start()`` launches, then waits for ``/health`` while polling the process (the caller has
    checked the port once, before anything started); ``stop()`` ends the whole process group.
    The log file is kept. While it starts, ``on_phase`` hears each start-up phase read from the log
    (``serving.watch.PHASES``) and ``on_line`` every new log line.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        host: str,
        port: int,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        health_timeout_s: float = 900.0,
        name: str = "server",
    ):
        self.argv = list(argv)
        self.host, self.port = host, port
        self.log_path = Path(log_path)
        self.env = dict(env or {})
        self.health_timeout_s = health_timeout_s
        self.name = name
        self.proc: subprocess.Popen | None = None
        self.ready_after_s: float | None = None

    @property
    def url(self) -> str:
        return base_url(self.host, self.port)

    def start(self, on_phase: OnText | None = None, on_line: OnText | None = None) -> "Server":
        started = time.monotonic()
        watch = ServerWatch([self.log_path], on_phase, on_line)
        self.proc = spawn_tethered(self.argv, self.env, self.log_path)
        try:
            watch.start()
            self._wait_ready(watch.tick)
            watch.ready()
        except BaseException:
            self.stop()
            raise
        self.ready_after_s = time.monotonic() - started
        return self

    def _wait_ready(self, tick: Callable[[], None] | None = None) -> None:
        assert self.proc is not None
        proc = self.proc

        def exited() -> tuple[str, int, Path] | None:
            code = proc.poll()
            return None if code is None else (self.name, code, self.log_path)

        wait_healthy(self.url, self.name, self.health_timeout_s, exited, self.log_path, tick)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exit_status(self) -> tuple[str, int, Path] | None:
        """(who, exit code, log) once the server has exited, else None."""
        code = self.proc.poll() if self.proc is not None else None
        return None if code is None else (self.name, code, self.log_path)

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc)

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


