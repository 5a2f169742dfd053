"""Where the tiny Llama 4 pair lives (pure: no building, no heavy imports)."""

from __future__ import annotations

import os
from pathlib import Path

TINY_VERSION = "v6"
KINDS = ("target", "draft", "draft_imperfect", "target_spread", "draft_spread", "draft_contrast", "draft_model",
         "draft_model_imperfect", "draft_eagle3", "draft_eagle3_imperfect")
ENV_DIR = "LLAMA4SPEC_TINY_DIR"


def _xdg_cache() -> Path | None:
    """``$XDG_CACHE_HOME`` when set to an absolute path (the XDG spec ignores empty or relative values)."""
    value = os.environ.get("XDG_CACHE_HOME")
    return Path(value) if value and Path(value).is_absolute() else None


def tiny_root() -> Path:
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser().resolve()
    cache = _xdg_cache() or Path.home() / ".cache"
    return cache / "llama4spec" / f"tiny-{TINY_VERSION}"


def describe_root(root: Path) -> tuple[str, str]:
    """``(where, pick)`` for one-line messages about ``root``: where it came from, how to choose another."""
    if root == tiny_root():
        if os.environ.get(ENV_DIR):
            return f"{ENV_DIR}={root}", f"point {ENV_DIR} at an empty or new directory"
        origin = " (under XDG_CACHE_HOME)" if _xdg_cache() else ""
        return f"the tiny-model cache {root}{origin}", f"set {ENV_DIR} to an empty or new directory"
    return str(root), "pick an empty or new directory"


def tiny_path(kind: str) -> Path:
    if kind not in KINDS:
        raise ValueError(f"unknown tiny model '{kind}'; one of {', '.join(KINDS)}")
    return tiny_root() / kind


def is_tiny_path(path: str | os.PathLike | None) -> bool:
    if not path:
        return False
    p = Path(path).expanduser().resolve()
    return p.parent == tiny_root() and p.name in KINDS
