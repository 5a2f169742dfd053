"""Every JSON or YAML file the tool reads goes through ``llama4spec.files``: bounded in size and
depth, never a directory, device or FIFO, one line per refusal; every record is written whole
(temporary file, fsync, rename), and a write that fails leaves the earlier file as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from llama4spec import files, yamlfiles
from llama4spec.files import RECORD, Expect, Unreadable

GOOD = {"output_throughput": 10.0, "completed": 5, "request_throughput": 1.0}
SMALL = Expect("run record", "give another", 1024)


def _deep(path: Path, levels: int = 100_000) -> Path:
    path.write_text("[" * levels + "]" * levels)
    return path


def _sparse(path: Path, size: int = 300 << 20) -> Path:
    """A file of ``size`` bytes that takes no disk (a record of several hundred MB)."""
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)  # opening it for reading would wait for a writer forever
    return path


# (name, make the file in tmp_path -> its path, words of the one line)
HOSTILE = [
    ("deep array", lambda d: _deep(d / "deep.json"), ["nested more than 64 levels"]),
    ("deep object", lambda d: (d / "o.json").write_text('{"a":' * 70 + "1" + "}" * 70) and d / "o.json",
     ["nested more than 64 levels"]),
    ("dev zero", lambda d: Path("/dev/zero"), ["not a regular file"]),
    ("fifo", lambda d: _fifo(d / "fifo.json"), ["not a regular file"]),
    ("directory", lambda d: d, ["is a directory"]),
    ("several hundred MB", lambda d: _sparse(d / "huge.json"), ["larger than 65,536 KiB"]),
    ("missing", lambda d: d / "nope.json", ["no such run record file"]),
    ("cut short", lambda d: (d / "cut.json").write_text('{"kind": "llama4spec.bench", "res') and d / "cut.json",
     ["not valid JSON", "ends early"]),
    ("not utf-8", lambda d: (d / "bin.json").write_bytes(b'{"a": "caf\xe9"}') and d / "bin.json",
     ["not UTF-8 text", "0xe9"]),
    ("huge integer", lambda d: (d / "int.json").write_text("1" * 5000) and d / "int.json", ["not valid JSON"]),
]


@pytest.mark.parametrize("name,make,words", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_every_hostile_file_is_one_line(tmp_path: Path, name, make, words) -> None:
    path = make(tmp_path)
    with pytest.raises(Unreadable) as err:
        files.read_json(path, RECORD)
    line = str(err.value)
    assert "\n" not in line and all(w in line for w in words), line


def test_json_or_none_says_none_for_missing_and_the_problem_otherwise(tmp_path: Path) -> None:
    assert files.json_or_none(tmp_path / "nope.json") == (None, None)
    (tmp_path / "cut.json").write_text("[1, 2")
    data, problem = files.json_or_none(tmp_path / "cut.json")
    assert data is None and "ends early" in problem
    (tmp_path / "ok.json").write_text("[1, 2]")
    assert files.json_or_none(tmp_path / "ok.json") == ([1, 2], None)
    (tmp_path / "null.json").write_text("null")  # there, so not "no such file"
    data, problem = files.json_or_none(tmp_path / "null.json")
    assert data is None and "null.json: holds null, not a run record" in problem


def test_the_cap_is_read_not_trusted_from_the_size(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"x": "y" * 2000}))
    with pytest.raises(Unreadable, match="larger than 1 KiB"):
        files.read_json(path, SMALL)


def test_yaml_alias_bomb_in_a_record_is_refused_without_building_it(tmp_path: Path) -> None:
    from tests.unit.runbook.test_runbook_input_bounds import BOMB

    path = tmp_path / "config.yaml"
    path.write_text(BOMB)
    with pytest.raises(Unreadable, match="expands to more than 100,000 values"):
        yamlfiles.read_yaml(path, RECORD)


@pytest.mark.parametrize("make", [lambda d: _deep(d / "deep.json"), lambda d: Path("/dev/zero"),
                                  lambda d: _fifo(d / "fifo.json"), lambda d: _sparse(d / "huge.json")],
                         ids=["deep", "dev-zero", "fifo", "huge"])
def test_compare_refuses_hostile_inputs_in_one_line(cli, tmp_path: Path, make) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD))
    done = cli("compare", str(make(tmp_path)), str(good), timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines


# -- atomic writes -------------------------------------------------------------------------------
def test_a_write_that_fails_leaves_the_earlier_record_and_no_temporary_file(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "status.json"
    files.write_json(path, {"status": "done"})

    def crash(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", crash)
    with pytest.raises(OSError):
        files.write_json(path, {"status": "running", "steps": ["x" * 10_000]})
    assert json.loads(path.read_text()) == {"status": "done"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["status.json"]


def test_a_writer_killed_mid_write_leaves_a_whole_record(tmp_path: Path, monkeypatch) -> None:
    """A writer stopped after half its bytes (as a kill would stop it): the record read back is the
    earlier one, whole."""
    path = tmp_path / "record.json"
    files.write_json(path, {"n": 1})
    real_fdopen = os.fdopen

    class Half:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            self.f.write(data[: len(data) // 2])
            raise KeyboardInterrupt  # killed here

        def __getattr__(self, name):
            return getattr(self.f, name)

    monkeypatch.setattr(files.os, "fdopen", lambda fd, mode="r", *a, **k: Half(real_fdopen(fd, mode, *a, **k)))
    with pytest.raises(KeyboardInterrupt):
        files.write_json(path, {"n": 2, "pad": "x" * 1000})
    monkeypatch.undo()
    assert files.read_json(path) == {"n": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]


def test_a_symlink_at_the_path_is_replaced_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("the user's own file\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.md").symlink_to(outside)
    files.write_atomic(run / "summary.md", "# rebuilt\n")
    assert outside.read_text() == "the user's own file\n"
    assert not (run / "summary.md").is_symlink() and (run / "summary.md").read_text() == "# rebuilt\n"


def test_written_files_get_the_usual_permissions(tmp_path: Path) -> None:
    files.write_atomic(tmp_path / "a.md", "x")
    assert (tmp_path / "a.md").stat().st_mode & 0o777 == 0o666 & ~files._UMASK
