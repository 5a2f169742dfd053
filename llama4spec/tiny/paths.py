"""Where the tiny Llama 4 pair lives (pure: no building, no heavy imports)."""

from __future__ import annotations

import os
from pathlib import Path

TINY_VERSION = "v2"
KINDS = ("target", "draft", "draft_imperfect")


def tiny_root() -> Path:
    env = os.environ.get("LLAMA4SPEC_TINY_DIR")
    if env:
        return Path(env).expanduser().resolve()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "llama4spec" / f"tiny-{TINY_VERSION}"


def tiny_path(kind: str) -> Path:
    if kind not in KINDS:
        raise ValueError(f"unknown tiny model '{kind}'; one of {', '.join(KINDS)}")
    return tiny_root() / kind


def is_tiny_path(path: str | os.PathLike | None) -> bool:
    if not path:
        return False
    p = Path(path).expanduser().resolve()
    return p.parent == tiny_root() and p.name in KINDS
