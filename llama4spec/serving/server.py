"""A vLLM OpenAI-compatible server on this machine, owned by this process, and what every server
handle shares with a multi-node one (``serving.nodes.Nodes``): start, watch, stop."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

from llama4spec.engine.args import base_url
from llama4spec.serving.process import lower_descendants, spawn_tethered, stop_group, wait_healthy
from llama4spec.serving.watch import ServerWatch

OnText = Callable[[str], None]


class ServerHandle(Protocol):
    """What the executor needs of a server, single-node (``Server``) or multi-node (``Nodes``)."""

    name: str
    ready_after_s: float | None

    @property
    def url(self) -> str: ...

    @property
    def log_path(self) -> Path: ...

    @property
    def proc(self) -> subprocess.Popen | None: ...

    def start(self, on_phase: OnText | None = None, on_line: OnText | None = None) -> "ServerHandle": ...

    def alive(self) -> bool: ...

    def exit_status(self) -> tuple[str, int, Path] | None: ...

    def stop(self) -> None: ...


class OwnedServer:
    """The processes of one server, owned by this process (a context manager): ``start()`` spawns
    them, then waits for ``/health`` while polling every one of them, and on any failure stops
    them all; ``stop()`` ends every process group. Logs are kept. While it starts, ``on_phase``
    hears each start-up phase read from the first log (``serving.watch.PHASES``) and ``on_line``
    every new line of every log (prefixed with its label, where it has one).

    A subclass sets ``host``, ``port``, ``name``, ``health_timeout_s`` and ``log_paths`` (the first
    is the one that serves the API), and says how its processes start (``_spawn``), what each
    is called (``_labels``) and how they stop (``stop``)."""

    host: str
    port: int
    name: str
    health_timeout_s: float
    log_paths: list[Path]

    def __init__(self) -> None:
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

    def _spawn(self) -> None:
        """Start every process, each appended to ``procs`` as it starts."""
        raise NotImplementedError

    def _labels(self) -> list[str]:
        """Each process's label in the live log lines ('' for none)."""
        raise NotImplementedError

    def _who(self, index: int) -> str:
        """Who exited, in an error: the server's name, and the process's label where it has one."""
        label = self._labels()[index]
        return f"{self.name}: {label}" if label else self.name

    def start(self, on_phase: OnText | None = None, on_line: OnText | None = None) -> "OwnedServer":
        self.launch(on_phase, on_line)
        return self.wait_ready()

    def launch(self, on_phase: OnText | None = None, on_line: OnText | None = None) -> "OwnedServer":
        """Its processes started, not waited for (``wait_ready``). Called from the thread that owns
        the server: a process tethered to its parent ends with the thread that spawned it."""
        self._started = time.monotonic()
        self._watch = ServerWatch(self.log_paths, on_phase, on_line, labels=self._labels())
        try:
            self._watch.start()
            self._spawn()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self) -> "OwnedServer":
        """Waits until the launched server answers (any thread may wait)."""
        watch = self._watch
        try:
            wait_healthy(self.url, self.name, self.health_timeout_s, self.exit_status, self.log_path, watch.tick)
            self._ready()
            watch.ready()
        except BaseException:
            self.stop()
            raise
        self.ready_after_s = time.monotonic() - self._started
        return self

    def _ready(self) -> None:
        """What happens once the server answers, before it is used (nothing by default)."""

    def alive(self) -> bool:
        return bool(self.procs) and self.exit_status() is None

    def exit_status(self) -> tuple[str, int, Path] | None:
        """(who, exit code, its log) once any of its processes has exited, else None."""
        for index, (proc, log) in enumerate(zip(self.procs, self.log_paths)):
            code = proc.poll()
            if code is not None:
                return self._who(index), code, log
        return None

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> "OwnedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Server(OwnedServer):
    """A vLLM OpenAI-compatible server owned by this process: one process, under the lifeline
    (``spawn_tethered``); ``stop()`` ends its whole process group. The caller has checked the
    port once, before anything started."""

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
        engine_nice: int | None = None,
    ):
        super().__init__()
        self.argv = list(argv)
        self.engine_nice = engine_nice
        self.host, self.port = host, port
        self.log_paths = [Path(log_path)]
        self.env = dict(env or {})
        self.health_timeout_s = health_timeout_s
        self.name = name

    def _spawn(self) -> None:
        self.procs.append(spawn_tethered(self.argv, self.env, self.log_path))

    def _labels(self) -> list[str]:
        return [""]

    def _ready(self) -> None:
        """With ``engine_nice``: the engine's processes (below the API server) run at that nice
        value from now on (``serve.engine_nice``)."""
        if self.engine_nice is not None and self.proc is not None:
            lower_descendants(self.proc.pid, self.engine_nice)

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc)
