"""The unit lane's in-process CLI: ``cli(*args)`` runs ``llama4spec.cli.main.main(args)`` in this
process and returns what ``tests.helpers.run_cli`` (a ``python -m llama4spec`` subprocess) would:
``returncode``, ``stdout``, ``stderr``.

Starting a Python interpreter and importing Hydra costs about a second per command; in-process it
costs milliseconds. Every call starts from the state a fresh process has (and leaves the process as
it found it), so no test depends on which command ran before it:

* cwd is the repository and COLUMNS=160, as for ``run_cli``; os.environ is restored afterwards;
* sys.stdout/sys.stderr/sys.argv are replaced for the call;
* the CLI's rich consoles (``llama4spec.cli.common.out``/``err``) are rebuilt for the call, so their
  width, colour and terminal detection are decided as at a fresh import, with that environment and
  the captured streams; afterwards they are put back as they were;
* verbosity (``-q``/``-v``: the CLI's and the runbook progress display's default), Hydra's global
  instance, compose's memo of failed compositions and the model fingerprint memo start empty;
* the SIGINT/SIGTERM/SIGHUP handlers are restored.

Tests that need a real process (signals, import isolation, an environment of its own, an installed
wheel) keep ``run_cli``.

Every unit test plans for the CPU build of vLLM (servers through its API server module), whichever
wheel is installed: ``gpu_build`` (a fixture) switches to the GPU build's ``vllm serve``, and
``use_build("gpu" | "cpu")`` switches within a test.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import traceback
from dataclasses import dataclass

import pytest

from tests.helpers import REPO

_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@dataclass
class CliResult:
    """What a finished command left: like ``subprocess.CompletedProcess`` (text mode)."""

    args: list[str]
    returncode: int
    stdout: str = ""
    stderr: str = ""


def _reset_globals() -> None:
    """Module-level state a command sets or fills, back to what a fresh import has."""
    from hydra.core.global_hydra import GlobalHydra

    from llama4spec.cli import common
    from llama4spec.config import compose, group_trees
    from llama4spec.results import provenance

    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    common.set_verbosity(common.NORMAL)  # the one setting (runbook.progress), as at a fresh import
    compose._ATTEMPTS.clear()
    group_trees.GROUP_TREES.clear()
    compose._COMPOSED.clear()
    provenance._FINGERPRINTS.clear()
    provenance._PLAIN.clear()


@contextlib.contextmanager
def _fresh_consoles():
    """Every module-level rich Console of the CLI rebuilt in place (other modules hold it by name),
    constructed now, in the call's environment and with its streams, as a fresh process would."""
    from rich.console import Console

    from llama4spec.cli import common

    consoles = [c for c in vars(common).values() if isinstance(c, Console)]
    saved = [dict(c.__dict__) for c in consoles]
    try:
        for c in consoles:
            fresh = Console(stderr=c.stderr)
            c.__dict__.clear()
            c.__dict__.update(fresh.__dict__)
        yield
    finally:
        for c, state in zip(consoles, saved):
            c.__dict__.clear()
            c.__dict__.update(state)


def run_in_process(*args: str, env: dict | None = None, timeout: float | None = None) -> CliResult:
    """``llama4spec ARGS`` in this process (``timeout`` is accepted for ``run_cli``'s signature; unused)."""
    from llama4spec.cli.main import main

    argv = [str(a) for a in args]
    environ = dict(os.environ)
    handlers = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    cwd = os.getcwd()
    saved_argv = sys.argv
    stdout, stderr = io.StringIO(), io.StringIO()
    code: int = 0
    _reset_globals()
    try:
        os.environ.update({"COLUMNS": "160", **(env or {})})
        os.chdir(REPO)
        sys.argv = [str(REPO / "llama4spec" / "__main__.py"), *argv]
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), _fresh_consoles():
            try:
                code = main(argv)
            except SystemExit as done:  # argparse (--help, --version, a usage error) and sys.exit
                if done.code is None:
                    code = 0
                elif isinstance(done.code, int):
                    code = done.code
                else:  # as the interpreter does: the message on stderr, exit status 1
                    print(done.code, file=sys.stderr)
                    code = 1
            except Exception:  # noqa: BLE001 - as an uncaught exception ends a process: traceback, 1
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
    finally:
        sys.argv = saved_argv
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)
        _reset_globals()
    return CliResult(argv, code if code is not None else 0, stdout.getvalue(), stderr.getvalue())


@pytest.fixture
def use_build(monkeypatch):
    """``use_build("gpu")`` / ``use_build("cpu")``: from here on the test plans for that vLLM build
    (``llama4spec.engine.build.vllm_cli`` replaced for the test)."""
    from llama4spec.engine import build

    def use(which: str) -> None:
        assert which in ("gpu", "cpu"), which
        monkeypatch.setattr(build, "vllm_cli", lambda: which == "gpu")

    return use


@pytest.fixture(autouse=True)
def cpu_build(use_build) -> None:
    """The unit tests' default: the CPU build, whichever vLLM wheel is installed."""
    use_build("cpu")


@pytest.fixture
def gpu_build(use_build) -> None:
    """The GPU build: servers start with ``vllm serve``."""
    use_build("gpu")


@pytest.fixture
def cli():
    """``cli(*args, env=None)``: run the CLI in-process; see this module's docstring."""
    return run_in_process
