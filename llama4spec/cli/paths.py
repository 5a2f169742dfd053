"""Paths given on the command line: the runbook to read (a file, or a shipped runbook by name), and
output paths, checked before anything starts (one line each)."""

from __future__ import annotations

import os
from pathlib import Path

from llama4spec.errors import UserError


def runbook_path(name: Path) -> Path:
    """A runbook file as given, or a shipped runbook by name (``tiny_cpu_sweep``) from the package."""
    if name.exists() or name.suffix or len(name.parts) > 1:
        return name
    import importlib.resources

    shipped = Path(str(importlib.resources.files("llama4spec.runbooks"))) / f"{name}.yaml"
    return shipped if shipped.is_file() else name


def _nearest_existing(path: Path) -> Path:
    for parent in path.absolute().parents:
        if parent.exists():
            return parent
    return Path("/")


def _writable_parent(path: Path, flag: str) -> None:
    base = _nearest_existing(path)
    if not base.is_dir():
        raise UserError(f"{flag} {path}: {base} is a file, not a directory; give a path in a directory")
    if not os.access(base, os.W_OK | os.X_OK) or str(base.resolve()).startswith(("/proc", "/sys", "/dev")):
        raise UserError(f"{flag} {path}: cannot write under {base}; give a path in a directory you can write to")


def check_output_file(path: Path, flag: str) -> None:
    """A file the command will write: not a directory, its directory writable (or creatable)."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{flag} {path}: is a directory; give a file path such as {path / 'run.json'}")
    if path.exists() and not (path.is_file() and os.access(path, os.W_OK)):
        raise UserError(f"{flag} {path}: exists and cannot be written; give another file path")
    _writable_parent(path, flag)


def check_output_dir(path: Path, flag: str) -> None:
    """A directory the command will write into: a directory (or creatable), writable."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag} {path}: is a file, not a directory; give a directory")
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK) or str(path.resolve()).startswith(("/proc", "/sys", "/dev")):
            raise UserError(f"{flag} {path}: cannot write into it; give a directory you can write to")
        return
    _writable_parent(path, flag)
