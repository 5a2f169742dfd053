"""Helpers shared by tests: running the CLI as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, timeout: float = 900, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m llama4spec ARGS`` and capture its output (argv list, no shell)."""
    full_env = dict(os.environ, COLUMNS="160", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "llama4spec", *args],
        capture_output=True, text=True, timeout=timeout, cwd=REPO, env=full_env,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
