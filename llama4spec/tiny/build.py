"""Build the tiny Llama 4 pair (``tiny.weights``) into a directory, or once into its cache.

Safety: llama4spec only ever deletes or changes files it wrote. Every build leaves a marker
(``tiny.marker``) recording the version and the SHA-256 of each file it wrote; only files the marker
proves (same path, same bytes) are ever replaced or removed. A directory holding anything else
is refused with one line (``UserError``) and left exactly as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from llama4spec.errors import UserError
from llama4spec.tiny.marker import MARKER, first_foreign, is_complete, parents, proven, read_marker, walk, write_files
from llama4spec.tiny.paths import KINDS, describe_root, tiny_root
from llama4spec.tiny.weights import pair_files


def build_into(root: Path, force: bool = False) -> Path:
    """Write the tiny pair into ``root`` (target/, draft/, draft_imperfect/, VERSION, MARKER).

    ``root`` may be new, empty, or hold an earlier build. If it holds anything else, it is refused
    unless ``force``; even then only llama4spec's own files are written: a file at one of its paths
    that it did not write (per the marker, or byte-identical) is refused, and nothing is ever deleted.
    Raises ``UserError`` with one line.
    """
    root = Path(root)
    if root.is_symlink() and not root.exists():
        raise UserError(f"{root} is a broken symbolic link; pick an empty or new directory")
    if root.exists() and not root.is_dir():
        raise UserError(f"{root} is a file, not a directory; pick an empty or new directory")
    files = pair_files()
    try:
        root.mkdir(parents=True, exist_ok=True)
        marker = read_marker(root)
        ours = parents(files) | (parents(marker["files"]) if marker else set())
        foreign, clashes = [], []
        for rel, kind in walk(root, into=ours):
            if rel == MARKER:
                if marker is None:
                    clashes.append(rel)
            elif rel in files:
                if kind != "file" or not (proven(root, marker, rel) or (root / rel).read_bytes() == files[rel]):
                    clashes.append(rel)
            elif rel in ours:
                if kind != "dir":
                    clashes.append(rel)
            elif not proven(root, marker, rel):
                foreign.append(rel)
        if clashes:
            raise UserError(
                f"{root / clashes[0]} exists and was not written by llama4spec; pick an empty or new directory "
                "(llama4spec never deletes or changes files it did not write)"
            )
        if foreign and not force:
            raise UserError(
                f"{root} has other files (e.g. {foreign[0]}); pick an empty directory or pass --force "
                "(llama4spec never deletes files it did not write)"
            )
        # Files an earlier build wrote that this one does not: still ours, left in place and listed.
        keep = {rel: marker["files"][rel] for rel in (marker or {}).get("files", {}) if rel not in files and proven(root, marker, rel)}
        write_files(root, files, keep)
    except OSError as err:
        raise UserError(f"cannot write the tiny pair into {root}: {_why(err, root)}") from None
    return root


def _why(err: OSError, fallback: Path) -> str:
    return f"{err.filename or fallback}: {err.strerror or err}"


def ensure_for(cfg) -> None:
    """Build the tiny pair (once) when ``cfg``'s target or draft is one of its models."""
    from llama4spec.tiny.paths import is_tiny_path

    if is_tiny_path(cfg.target.model) or is_tiny_path(cfg.draft.model):
        ensure_built()


def ensure_built(root: Path | None = None) -> Path:
    """Build the tiny pair once (cached); an interrupted build never leaves a half-written cache.

    ``root`` (default ``tiny_root()``) may be missing, an empty directory, or a cache llama4spec
    wrote (an older or damaged one is replaced only when its marker proves every file in it).
    Anything else raises ``UserError`` with one line and is left untouched: this function never
    deletes a directory or file it did not create.
    """
    root = Path(root) if root is not None else tiny_root()
    if is_complete(root):
        return root
    where, pick = describe_root(root)
    fix = f"{pick}, or move that one away yourself"
    if root.is_symlink():
        if not root.exists():
            raise UserError(f"{where}: that path is a broken symbolic link; {fix}")
        root = root.resolve()
    if root.exists() and not root.is_dir():
        raise UserError(f"{where}: that path is a file, not a directory; {fix}")
    marker = None
    if root.is_dir():
        try:
            marker = read_marker(root)
            foreign = first_foreign(root, marker)
        except OSError as err:
            raise UserError(f"{where}: cannot read that directory ({_why(err, root)}); {fix}") from None
        if foreign is not None:
            if marker is None and _looks_like_old_cache(root):
                what = "it looks like an older tiny-model cache but has no llama4spec marker proving who wrote it"
            elif marker is None:
                what = f"that directory exists and is not a tiny-model cache (it holds {foreign})"
            else:
                what = f"that tiny-model cache also holds files llama4spec did not write (e.g. {foreign})"
            raise UserError(f"{where}: {what}; {fix} (llama4spec never deletes files it did not write)")
    # Empty or missing: build; marked and holding only llama4spec's own files: replace.
    return _install(root, where, pick, replace_old=marker is not None)


def _looks_like_old_cache(root: Path) -> bool:
    """An unmarked directory shaped like an earlier build (VERSION says vN, a model directory beside it)."""
    try:
        version = (root / "VERSION").read_text().strip()
    except (OSError, UnicodeDecodeError):
        return False
    return version[:1] == "v" and version[1:].isdigit() and any((root / kind).is_dir() for kind in KINDS)


def _install(root: Path, where: str, pick: str, replace_old: bool) -> Path:
    """Build beside ``root`` in a fresh temporary directory, then rename it into place."""
    fix = f"{pick} you can write to"
    parent = root.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp: Path | None = Path(tempfile.mkdtemp(prefix=".tiny-", dir=parent))
    except OSError as err:
        raise UserError(f"{where}: cannot create a directory there ({_why(err, parent)}); {fix}") from None
    old: Path | None = None
    try:
        try:
            write_files(tmp, pair_files(), keep={})
        except OSError as err:
            raise UserError(f"{where}: cannot write the tiny pair beside it ({_why(err, tmp)}); {fix}") from None
        if replace_old:
            old = _move_aside(root, where, fix)
        try:
            os.replace(tmp, root)  # also takes the place of an empty directory
            tmp = None
        except OSError as err:
            if not is_complete(root):  # else another process finished first: fine
                raise UserError(f"{where}: cannot put the tiny pair there ({_why(err, root)}); {fix}") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)  # created by this call
        if old is not None:
            _remove_own(old)
    return root


def _move_aside(root: Path, where: str, fix: str) -> Path | None:
    """Rename llama4spec's old cache at ``root`` into a private directory; None if it is already gone.

    Its contents are checked again once private (nothing can change them there): if anything in it
    is not proven llama4spec's own, it is put back (or, if that fails, left where the message says)."""
    try:
        aside = Path(tempfile.mkdtemp(prefix=".tiny-old-", dir=root.parent))
    except OSError as err:
        raise UserError(f"{where}: cannot replace the old tiny-model cache ({_why(err, root.parent)}); {fix}") from None
    old = aside / "old"
    try:
        os.rename(root, old)
    except FileNotFoundError:
        aside.rmdir()
        return None
    except OSError as err:
        aside.rmdir()
        raise UserError(f"{where}: cannot replace the old tiny-model cache ({_why(err, root)}); {fix}") from None
    try:
        clean = first_foreign(old, read_marker(old)) is None
    except OSError:
        clean = False
    if clean:
        return old
    try:
        os.rename(old, root)
    except OSError:
        raise UserError(
            f"{where}: files appeared in it while llama4spec was replacing its old cache; they are untouched in {old}"
        ) from None
    try:
        aside.rmdir()
    except OSError:
        pass
    raise UserError(f"{where}: files appeared in it while llama4spec was replacing its old cache; {fix}")


def _remove_own(old: Path) -> None:
    """Remove llama4spec's moved-aside cache: only files its marker proves, then the emptied directories."""
    marker = read_marker(old)
    files = (marker or {}).get("files", {})
    doomed = [old / rel for rel in files if proven(old, marker, rel)] + ([old / MARKER] if marker else [])
    for path in doomed:
        try:
            path.unlink()
        except OSError:
            pass
    for path in [old / rel for rel in sorted(parents(files), key=lambda r: -r.count("/"))] + [old, old.parent]:
        try:
            path.rmdir()  # only if now empty
        except OSError:
            pass
