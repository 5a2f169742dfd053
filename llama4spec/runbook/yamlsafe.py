"""Reading a runbook's YAML, bounded (``yamlfiles.read_yaml``): at most MAX_BYTES from a regular file,
MAX_DEPTH levels, MAX_NODES values with every alias expanded, no repeated keys; every refusal is
one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama4spec.files import Expect, Unreadable
from llama4spec.yamlfiles import read_yaml as read_bounded

MAX_BYTES = 1 << 20  # the file: read at most this much (1 MiB)
RUNBOOK = Expect("runbook", "give a runbook YAML file (see runbooks/ for the shipped ones; a sweep step stands "
                 "for many points)", MAX_BYTES)


def read_yaml(path: Path) -> tuple[Any, str | None]:
    """(data, None) for a readable runbook file, or (None, the one-line problem)."""
    try:
        return read_bounded(Path(path), RUNBOOK), None
    except Unreadable as err:
        return None, str(err)
