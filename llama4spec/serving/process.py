"""Process lifetime: launch in a new session, wait for /health, stop the whole group.

Every process started here gets its own session (and so its own process group), a log file,
a teardown that signals the whole group, and a parent-death signal: vLLM's API server spawns
engine processes, and none of them may outlive the tool, even when the tool is SIGKILLed.
A crash during start-up fails at once with the log tail.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import IO, Callable, Iterator, Mapping, Sequence

from llama4spec.errors import UserError
from llama4spec.multinode.lifeline import die_with_parent


class ServerError(UserError):
    """A server that died or never became healthy; ``log_tail`` holds the last lines of its log."""

    def __init__(self, problem: str, log_tail: Sequence[str] = ()):
        super().__init__(problem)
        self.log_tail = list(log_tail)


def _address(host: str, port: int) -> tuple[int, tuple]:
    """(family, socket address) of ``host``'s first address, as a server binding it would use."""
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    return family, address


def unbindable(host: str) -> str | None:
    """Why no server can listen on ``host`` on this machine (None when one can): an address of
    another machine, or a name that does not resolve. Tried on a free port."""
    try:
        family, address = _address(host, 0)
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind(address)
    except OSError as err:
        return err.strerror or str(err) or type(err).__name__
    return None


def port_in_use(host: str, port: int) -> bool:
    """Whether something already listens on (host, port): a connect succeeds or a bind fails."""
    try:
        family, address = _address(host, port)
    except OSError:
        return False  # not resolvable here: ``unbindable`` says so
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        try:
            if probe.connect_ex(address) == 0:
                return True
        except OSError:
            pass
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(address)
        except OSError:
            return True
    return False


def log_tail(path: Path, lines: int = 30, skip_blank: bool = False) -> list[str]:
    """The last ``lines`` lines of a log (``skip_blank``: of its lines that are not blank); none
    when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            kept = (line for line in f if line.strip()) if skip_blank else f
            return [line.rstrip("\n") for line in deque(kept, maxlen=lines)]
    except OSError:
        return []


_LOG_PREFIX = re.compile(r"^(?:\(\w+ pid=\d+\) )?(?:(?P<level>[A-Z]+) \d\d-\d\d [\d:]+ \[[^\]]*\] )?")
_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?P<name>[A-Za-z_]\w*(?:Error|Exception|Exit)): (?P<message>\S.*)$")
_ARGPARSE = re.compile(r"^\S+: error: (?P<message>\S.*)$")
_WRAPPERS = ("root cause", "stack trace")  # vLLM's re-raises that point back at the first error


def root_cause(path: Path, max_chars: int = 300) -> str | None:
    """The first error a server's log reports (``SafetensorError: Error while deserializing header: ...``,
    an argparse ``error: ...``), skipping vLLM's wrappers that point back at it; None without one."""
    try:
        with open(path, errors="replace") as f:
            for raw in f:
                head = _LOG_PREFIX.match(raw)
                if head and head.group("level") not in (None, "ERROR", "CRITICAL"):
                    continue
                text = raw[head.end() if head else 0:].strip()
                found = _EXCEPTION.match(text) or _ARGPARSE.match(text)
                if found and not any(w in found.group("message").lower() for w in _WRAPPERS):
                    name = found.groupdict().get("name")
                    cause = f"{name}: {found.group('message')}" if name else found.group("message")
                    return cause if len(cause) <= max_chars else cause[:max_chars - 3] + "..."
    except OSError:
        return None
    return None


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def terminate_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group led by ``proc`` (started here: it leads its own session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)


def close_stdin(proc: subprocess.Popen) -> None:
    """Close ``proc``'s input pipe: the end of file a lifeline takes as the order to stop."""
    if proc.stdin and not proc.stdin.closed:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def _ended(proc: subprocess.Popen) -> bool:
    return proc.poll() is not None and not group_alive(proc.pid)


def _wait_ended(procs: Sequence[subprocess.Popen], wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and not all(_ended(p) for p in procs):
        time.sleep(0.2)


def stop_groups(
    procs: Sequence[subprocess.Popen],
    wait_s: float,
    ask: Callable[[subprocess.Popen], None] = terminate_group,
    then_grace_s: float | None = None,
) -> None:
    """Stop processes started here, each with its whole group: ``ask`` every one at once (SIGTERM
    to its group unless told otherwise), wait up to ``wait_s`` for all of them to end, then, for
    whatever is left, SIGTERM its group again and wait ``then_grace_s`` (None: no second asking),
    and SIGKILL it."""
    for proc in procs:
        ask(proc)
    _wait_ended(procs, wait_s)
    for proc in procs:
        if then_grace_s is not None and not _ended(proc):
            terminate_group(proc)
            _wait_ended([proc], then_grace_s)
        if _ended(proc):
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        _wait_ended([proc], 10.0)
        proc.wait(timeout=5)


def stop_group(proc: subprocess.Popen, grace_s: float = 20.0) -> None:
    """SIGTERM the process group led by ``proc``, wait, then SIGKILL whatever is left."""
    stop_groups([proc], grace_s)


def spawn(argv: Sequence[str], env: Mapping[str, str], log_path: Path, stdin: int | None = subprocess.DEVNULL,
          inherit_env: bool = True) -> subprocess.Popen:
    """Start ``argv`` (a list, never a shell string) in a new session, output appended to
    ``log_path``; the child gets SIGTERM if this process dies, however it dies. ``env`` is added
    to this process's environment (``inherit_env=False``: it is the whole environment)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        return spawn_piped(argv, env, stdin=stdin, stdout=log, stderr=subprocess.STDOUT, inherit_env=inherit_env)


def spawn_piped(argv: Sequence[str], env: Mapping[str, str], *, stdin: int | None, stdout: int | IO[bytes] | None,
                stderr: int | IO[bytes] | None, inherit_env: bool = True) -> subprocess.Popen:
    """``spawn`` with the child's streams given: a new session and the parent-death signal."""
    return subprocess.Popen(
        list(argv),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env={**os.environ, **env} if inherit_env else dict(env),
        preexec_fn=die_with_parent,
    )


LIFELINE_MODULE = "llama4spec.multinode.lifeline"
TETHER_GRACE_S = 8.0  # a server stopping on SIGTERM gets this long before its group is killed


def spawn_tethered(argv: Sequence[str], env: Mapping[str, str], log_path: Path) -> subprocess.Popen:
    """Start ``argv`` under the lifeline, tethered by a pipe: the lifeline stops ``argv``'s whole
    process group (engine processes included) when this process ends, however it ends (the pipe
    closes), or when it is stopped itself. A server's own SIGTERM handling alone is not enough: during
    start-up vLLM's API server dies at once and leaves its engine process running."""
    lifeline = [sys.executable, "-m", LIFELINE_MODULE, "--grace", f"{TETHER_GRACE_S:g}", "--", *argv]
    return spawn(lifeline, env, log_path, stdin=subprocess.PIPE)


def lower_descendants(pid: int, nice: int, depth: int = 2) -> int:
    """Set every thread of every process ``depth`` or more levels below ``pid`` to ``nice`` (never
    lowered: a thread already nicer keeps its value): under the lifeline (``spawn_tethered``), level
    1 is the API server, level 2 on its engine core and workers. Threads they start later inherit
    it. Returns the processes changed; a process that ended meanwhile, or that may not be changed,
    is skipped (the server runs on at its own priority)."""
    import psutil

    try:
        level = [psutil.Process(pid)]
        for _ in range(depth):
            level = [child for proc in level for child in proc.children()]
        below = [*level, *(d for proc in level for d in proc.children(recursive=True))]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0
    changed = 0
    for proc in below:
        try:
            for thread in proc.threads():
                with contextlib.suppress(ProcessLookupError):
                    if os.getpriority(os.PRIO_PROCESS, thread.id) < nice:
                        os.setpriority(os.PRIO_PROCESS, thread.id, nice)
            changed += 1
        except (psutil.NoSuchProcess, psutil.AccessDenied, PermissionError):
            continue
    return changed


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
    tick: Callable[[], None] | None = None,
) -> None:
    """Poll ``url/health`` until it answers 200; fail at once when ``exited()`` names a process
    that ended (who, exit code, its log), or when ``timeout_s`` passes. ``tick`` (live progress:
    read the log) is called before every poll."""

    deadline = time.monotonic() + timeout_s
    while True:
        if tick is not None:
            tick()
        gone = exited()
        if gone:
            who, code, log = gone
            cause = root_cause(log)
            raise ServerError(f"{who} exited with code {code} during start-up{f' ({cause})' if cause else ''}; "
                              f"full log: {log}", log_tail(log))
        if is_healthy(url, timeout_s=2):
            return
        if time.monotonic() > deadline:
            raise ServerError(
                f"{name} did not answer {url}/health within {timeout_s:.0f} s; "
                f"raise serve.health_timeout_s or read the log: {log_path}",
                log_tail(log_path),
            )
        time.sleep(0.5)


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP (terminal closed, ssh dropped) into SystemExit(128 + signal) so
    every ``with`` block (and its servers) unwinds.

    SIGINT already raises KeyboardInterrupt; children live in their own sessions, so a
    terminal's Ctrl-C reaches only this process, which then stops them in order.
    """

    def _raise(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous: dict[int, object] = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, _raise)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
