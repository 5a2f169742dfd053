"""The tiny-model cache never deletes or changes what llama4spec did not write (pure, no vLLM)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from llama4spec.errors import UserError
from llama4spec.tiny import build as tiny
from llama4spec.tiny.marker import MARKER, REQUIRED, is_complete
from llama4spec.tiny.paths import TINY_VERSION, tiny_root


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` -> sha256 of its bytes (symlinks not followed)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath, name)
            out[str(path.relative_to(root))] = "link" if path.is_symlink() else hashlib.sha256(path.read_bytes()).hexdigest()
        for name in dirnames:
            out[str(Path(dirpath, name).relative_to(root)) + "/"] = "dir"
    return out


def _user_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "thesis.tex").write_text("years of work\n")
    (path / "data").mkdir()
    (path / "data" / "results.csv").write_bytes(b"a,b\n1,2\n")
    (path / "VERSION").write_text("my project 1.0\n")
    (path / "target").mkdir()
    (path / "target" / "notes.md").write_text("mine\n")
    return path


def _one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text and len(err.value.problems) == 1
    return text


def _assert_cache(root: Path) -> None:
    assert is_complete(root)
    marker = json.loads((root / MARKER).read_text())
    assert marker["version"] == TINY_VERSION and marker["written_by"] == "llama4spec"
    assert set(REQUIRED) <= set(marker["files"])


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv("LLAMA4SPEC_TINY_DIR", raising=False)
    return monkeypatch


def test_foreign_dir_via_env_is_untouched(tmp_path, monkeypatch):
    root = _user_dir(tmp_path / "mine")
    before = _snapshot(root)
    monkeypatch.setenv("LLAMA4SPEC_TINY_DIR", str(root))
    with pytest.raises(UserError) as err:
        tiny.ensure_built()
    line = _one_line(err)
    assert f"LLAMA4SPEC_TINY_DIR={root}" in line and "not a tiny-model cache" in line
    assert _snapshot(root) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # no temporary directory left beside it


def test_foreign_dir_via_xdg_cache_is_untouched(tmp_path, no_env):
    no_env.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tiny_root()
    assert root == tmp_path / "cache" / "llama4spec" / f"tiny-{TINY_VERSION}"
    _user_dir(root)
    before = _snapshot(tmp_path)
    with pytest.raises(UserError) as err:
        tiny.ensure_built()
    line = _one_line(err)
    assert str(root) in line and "XDG_CACHE_HOME" in line and "LLAMA4SPEC_TINY_DIR" in line
    assert _snapshot(tmp_path) == before


def test_relative_or_empty_xdg_cache_is_ignored(tmp_path, no_env):
    no_env.setenv("HOME", str(tmp_path))
    for value in ("", "relative/cache"):
        no_env.setenv("XDG_CACHE_HOME", value)
        assert tiny_root() == tmp_path / ".cache" / "llama4spec" / f"tiny-{TINY_VERSION}"


def test_unmarked_dir_with_a_version_file_is_untouched(tmp_path, monkeypatch):
    root = tmp_path / "old"
    root.mkdir()
    (root / "VERSION").write_text("v1\n")
    (root / "target").mkdir()
    (root / "target" / "config.json").write_text("{}\n")
    before = _snapshot(root)
    monkeypatch.setenv("LLAMA4SPEC_TINY_DIR", str(root))
    with pytest.raises(UserError) as err:
        tiny.ensure_built()
    assert "no llama4spec marker" in _one_line(err)
    assert _snapshot(root) == before


def test_empty_dir_is_built_into_and_then_reused(tmp_path, monkeypatch):
    root = tmp_path / "empty"
    root.mkdir()
    monkeypatch.setenv("LLAMA4SPEC_TINY_DIR", str(root))
    assert tiny.ensure_built() == root
    _assert_cache(root)
    stamp = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    assert tiny.ensure_built() == root  # second call: the cache as it is
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def test_missing_dir_is_built(tmp_path):
    root = tmp_path / "a" / "b" / "tiny"
    assert tiny.ensure_built(root) == root
    _assert_cache(root)


def test_old_version_cache_written_by_the_tool_is_replaced(tmp_path, monkeypatch):
    root = tmp_path / "tiny"
    tiny.build_into(root)
    old = {"target/config.json": b"{}\n", "target/old_only.bin": b"\x00\x01", "VERSION": b"v1\n"}
    for rel, data in old.items():
        (root / rel).write_bytes(data)
    marker = json.loads((root / MARKER).read_text())
    marker["version"] = "v1"
    marker["files"] = {rel: hashlib.sha256((root / rel).read_bytes()).hexdigest() for rel in marker["files"]} | {
        rel: hashlib.sha256(data).hexdigest() for rel, data in old.items()
    }
    (root / MARKER).write_text(json.dumps(marker))
    assert not is_complete(root)
    monkeypatch.setenv("LLAMA4SPEC_TINY_DIR", str(root))
    assert tiny.ensure_built() == root
    _assert_cache(root)
    assert not (root / "target" / "old_only.bin").exists()
    assert (root / "VERSION").read_text() == TINY_VERSION + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny"]


def test_old_cache_with_a_user_file_added_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "tiny"
    tiny.build_into(root)
    marker = json.loads((root / MARKER).read_text())
    (root / MARKER).write_text(json.dumps(marker | {"version": "v1"}))
    (root / "draft" / "my_notes.txt").write_text("keep me\n")
    before = _snapshot(root)
    monkeypatch.setenv("LLAMA4SPEC_TINY_DIR", str(root))
    with pytest.raises(UserError) as err:
        tiny.ensure_built()
    assert "draft/my_notes.txt" in _one_line(err)
    assert _snapshot(root) == before


def test_old_cache_with_a_changed_file_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "tiny"
    tiny.build_into(root)
    marker = json.loads((root / MARKER).read_text())
    (root / MARKER).write_text(json.dumps(marker | {"version": "v1"}))
    (root / "target" / "config.json").write_text("edited by hand\n")
    before = _snapshot(root)
    with pytest.raises(UserError):
        tiny.ensure_built(root)
    assert _snapshot(root) == before


def test_forged_marker_does_not_make_a_dir_deletable(tmp_path, monkeypatch):
    root = _user_dir(tmp_path / "mine")
    (root / MARKER).write_text(json.dumps({"written_by": "llama4spec", "version": "v0", "files": {}}))
    before = _snapshot(root)
    monkeypatch.setenv("LLAMA4SPEC_TINY_DIR", str(root))
    with pytest.raises(UserError):
        tiny.ensure_built()
    assert _snapshot(root) == before


def test_root_that_is_a_file(tmp_path, monkeypatch):
    root = tmp_path / "afile"
    root.write_text("not a directory\n")
    monkeypatch.setenv("LLAMA4SPEC_TINY_DIR", str(root))
    with pytest.raises(UserError) as err:
        tiny.ensure_built()
    assert "is a file" in _one_line(err) and str(root) in str(err.value)
    assert root.read_text() == "not a directory\n"
    with pytest.raises(UserError) as err:
        tiny.build_into(root)
    assert "is a file" in _one_line(err)
    assert root.read_text() == "not a directory\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_parent_is_one_line(tmp_path, monkeypatch):
    parent = tmp_path / "locked"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        monkeypatch.setenv("LLAMA4SPEC_TINY_DIR", str(parent / "tiny"))
        with pytest.raises(UserError) as err:
            tiny.ensure_built()
        assert str(parent) in _one_line(err)
        with pytest.raises(UserError) as err:
            tiny.build_into(parent / "pair")
        assert str(parent) in _one_line(err)
    finally:
        parent.chmod(0o700)


def test_permission_denied_is_one_line(tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path))

    monkeypatch.setattr(tiny.tempfile, "mkdtemp", denied)
    monkeypatch.setenv("LLAMA4SPEC_TINY_DIR", str(tmp_path / "tiny"))
    with pytest.raises(UserError) as err:
        tiny.ensure_built()
    line = _one_line(err)
    assert str(tmp_path / "tiny") in line and "Permission denied" in line
    assert err.value.__suppress_context__  # no chained traceback


def test_oserror_creating_the_parent_is_one_line(tmp_path, monkeypatch):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be\n")
    monkeypatch.setenv("LLAMA4SPEC_TINY_DIR", str(blocker / "sub" / "tiny"))
    with pytest.raises(UserError) as err:
        tiny.ensure_built()
    assert str(blocker) in _one_line(err)
    assert blocker.read_text() == "a file where a directory should be\n"


def test_tiny_models_into_foreign_dir_refuses_without_force(tmp_path):
    root = _user_dir(tmp_path / "mine")
    (root / "VERSION").unlink()  # only files at paths the build does not write
    before = _snapshot(root)
    with pytest.raises(UserError) as err:
        tiny.build_into(root)
    line = _one_line(err)
    assert str(root) in line and "--force" in line and "never deletes" in line
    assert _snapshot(root) == before


def test_tiny_models_with_force_leaves_foreign_files_intact(tmp_path):
    root = _user_dir(tmp_path / "mine")
    (root / "VERSION").unlink()
    before = _snapshot(root)
    assert tiny.build_into(root, force=True) == root
    after = _snapshot(root)
    assert {k: v for k, v in after.items() if k in before} == before
    _assert_cache(root)
    assert tiny.build_into(root, force=True) == root  # again: only its own files rewritten
    assert {k: v for k, v in _snapshot(root).items() if k in before} == before
    # The marker covers only llama4spec's files, so the cache can never be "replaced" wholesale.
    marker = json.loads((root / MARKER).read_text())
    (root / MARKER).write_text(json.dumps(marker | {"version": "v1"}))
    with pytest.raises(UserError):
        tiny.ensure_built(root)
    assert {k: v for k, v in _snapshot(root).items() if k in before} == before


def test_force_never_overwrites_a_user_file_at_one_of_its_paths(tmp_path):
    root = _user_dir(tmp_path / "mine")  # holds the user's own VERSION
    before = _snapshot(root)
    for force in (False, True):
        with pytest.raises(UserError) as err:
            tiny.build_into(root, force=force)
        assert "VERSION" in _one_line(err) and "not written by llama4spec" in str(err.value)
        assert _snapshot(root) == before


def test_symlink_at_one_of_its_paths_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "pair"
    root.mkdir()
    (root / "target").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UserError):
        tiny.build_into(root, force=True)
    assert list(outside.iterdir()) == []


def test_tiny_models_rebuild_and_empty_dir(tmp_path):
    root = tmp_path / "pair"
    root.mkdir()
    tiny.build_into(root)  # empty: fine
    first = _snapshot(root)
    tiny.build_into(root)  # its own earlier build: fine without force, same bytes
    assert _snapshot(root) == first


def test_unmarked_earlier_build_is_accepted_when_bytes_match(tmp_path):
    """A pair built before the marker existed: identical bytes, so rewriting changes nothing."""
    root = tmp_path / "legacy"
    tiny.build_into(root)
    (root / MARKER).unlink()
    assert is_complete(root)
    assert tiny.ensure_built(root) == root  # reused as it is
    tiny.build_into(root)
    _assert_cache(root)
