"""Faults injected into the tool for the tests: not part of the package.

``python -m tests.faults NAME:N:ACTION ARGS...`` runs ``llama4spec ARGS...`` (from the repository's
root, where ``tests`` is importable) with a fault at the N-th time the process renames a file named
NAME into place, i.e. after ``files.write_atomic`` has the temporary file on disk and before the
rename: ACTION ``kill`` is a crash (SIGKILL to itself); ``pause`` writes ``NAME.paused`` beside it
and waits (up to 120 s) for a signal. ``install(spec)`` does the same in this process.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path


def install(spec: str) -> None:
    """Act on the N-th rename into a file named NAME (``spec`` is ``NAME:N:ACTION``)."""
    name, _, rest = spec.partition(":")
    nth, _, action = rest.partition(":")
    if not name or not nth.isdigit() or action not in ("kill", "pause"):
        raise SystemExit(f"tests.faults: {spec!r} is not NAME:N:kill or NAME:N:pause")
    rename = os.replace
    seen = [0]

    def replace(src, dst, *args, **kwargs):
        if Path(os.fsdecode(dst)).name == name:
            seen[0] += 1
            if seen[0] == int(nth):
                if action == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                (Path(os.fsdecode(dst)).parent / f"{name}.paused").touch()
                time.sleep(120)
        return rename(src, dst, *args, **kwargs)

    os.replace = replace


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("usage: python -m tests.faults NAME:N:ACTION [llama4spec arguments]")
    install(argv[0])
    from llama4spec.cli.main import main as tool

    sys.argv = ["llama4spec", *argv[1:]]
    return tool(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
