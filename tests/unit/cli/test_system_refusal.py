"""An OSError that reaches a command (a full disk, a permission, a read-only mount) is one line
naming the file and what to do, exit 1: never a traceback."""

from __future__ import annotations

import errno

import pytest

from llama4spec.cli import main as cli_main
from llama4spec.files import write_atomic


@pytest.mark.parametrize("code, said", [
    (errno.ENOSPC, "the disk is full: free some space, then run again (a run: with --resume)"),
    (errno.EROFS, "read-only"),
    (errno.EACCES, "no permission there"),
    (errno.EIO, ""),
])
def test_each_refusal_is_one_line_naming_the_file(code: int, said: str) -> None:
    line = cli_main.system_refusal(OSError(code, "the system's words", "/runs/x/status.json"))
    assert line.startswith("/runs/x/status.json: the system's words") and said in line and "\n" not in line


def test_a_failed_write_names_the_record_and_leaves_no_temporary(tmp_path, monkeypatch) -> None:
    import os

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as caught:
        write_atomic(tmp_path / "status.json", "{}")
    assert caught.value.filename == str(tmp_path / "status.json") and caught.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_turns_it_into_one_line(monkeypatch, capsys) -> None:
    from llama4spec.tiny import build

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "/runs/x/status.json")

    monkeypatch.setattr(build, "ensure_built", full)  # tiny-models calls it at run time
    code = cli_main.main(["tiny-models"])
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err
    assert "/runs/x/status.json: No space left on device; the disk is full" in captured.err + captured.out
