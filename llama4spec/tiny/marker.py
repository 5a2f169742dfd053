"""What llama4spec wrote into a tiny pair's directory, and proof of it: the marker (``MARKER``: the
version and the SHA-256 of each file written), read back; the entries it does not prove; whether a
directory holds a complete pair; files written atomically and listed in the marker.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path

from llama4spec.tiny.paths import KINDS, TINY_VERSION
from llama4spec.tiny.weights import json_bytes

MARKER = ".llama4spec-tiny"  # JSON: who wrote the directory, the version and {path: sha256} of each file
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json")
REQUIRED = tuple(f"{kind}/{name}" for kind in KINDS for name in MODEL_FILES) + ("VERSION",)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _marker_bytes(hashes: dict[str, str]) -> bytes:
    return json_bytes({"written_by": "llama4spec", "contents": "tiny Llama 4 pair", "version": TINY_VERSION, "files": hashes})


def _safe_rel(rel) -> bool:
    parts = rel.split("/") if isinstance(rel, str) else []
    return bool(parts) and not rel.startswith("/") and all(p not in ("", ".", "..") for p in parts) and rel != MARKER


def read_marker(root: Path) -> dict | None:
    """The marker llama4spec wrote into ``root``, or None (absent, a symlink, or not one of ours)."""
    path = root / MARKER
    if path.is_symlink() or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("written_by") != "llama4spec" or not isinstance(data.get("version"), str):
        return None
    files = data.get("files")
    if not isinstance(files, dict) or not all(_safe_rel(k) and isinstance(v, str) for k, v in files.items()):
        return None
    return data


def parents(rels) -> set[str]:
    """Every directory (relative path) that holds one of ``rels``."""
    out = set()
    for rel in rels:
        parts = rel.split("/")[:-1]
        out |= {"/".join(parts[: i + 1]) for i in range(len(parts))}
    return out


def walk(root: Path, into: set[str]):
    """``(relative path, kind)`` under ``root`` without following symlinks; kind is dir, file or other.

    Only descends into directories named in ``into`` (never into a user's own trees)."""
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(root / rel if rel else root) as entries:
            for entry in entries:
                sub = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    yield sub, "dir"
                    if sub in into:
                        stack.append(sub)
                elif entry.is_file(follow_symlinks=False):
                    yield sub, "file"
                else:
                    yield sub, "other"


def proven(root: Path, marker: dict | None, rel: str) -> bool:
    """True when ``root/rel`` is a regular file whose bytes are what the marker says llama4spec wrote."""
    if marker is None or rel not in marker["files"]:
        return False
    path = root / rel
    try:
        return not path.is_symlink() and path.is_file() and _sha256(path.read_bytes()) == marker["files"][rel]
    except OSError:
        return False


def first_foreign(root: Path, marker: dict | None) -> str | None:
    """The first entry of ``root`` llama4spec did not write (per its marker), or None if all are its own."""
    if marker is None:
        with os.scandir(root) as entries:
            return next((e.name for e in entries), None)
    dirs = parents(marker["files"])
    for rel, kind in walk(root, into=dirs):
        if rel == MARKER or (kind == "dir" and rel in dirs):
            continue
        if kind != "file" or not proven(root, marker, rel):
            return rel
    return None


def is_complete(root: Path) -> bool:
    """True when ``root`` holds a complete tiny pair of this version (marked, or an unmarked v2-era build)."""
    try:
        if not root.is_dir():
            return False
        marker = read_marker(root)
        if marker is not None:
            if marker["version"] != TINY_VERSION:
                return False
        elif (root / "VERSION").read_bytes() != (TINY_VERSION + "\n").encode():
            return False
        return all((root / rel).is_file() for rel in REQUIRED)
    except OSError:
        return False


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` through a fresh temporary file beside it (honours the umask; never half-written)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_files(root: Path, files: dict[str, bytes], keep: dict[str, str]) -> None:
    """Write ``files`` into ``root`` (skipping identical ones), then the marker (listing them and ``keep``)."""
    hashes = dict(keep)
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        hashes[rel] = _sha256(data)
        if not path.is_symlink() and path.is_file() and path.read_bytes() == data:
            continue
        _write_atomic(path, data)
    _write_atomic(root / MARKER, _marker_bytes(hashes))
