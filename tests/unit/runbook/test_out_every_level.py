"""``report --out DIR`` writes only inside DIR: every directory at every level below it is resolved
and checked, not only the step directories (a search's ``probes`` linked elsewhere in an earlier
merge is refused in one line, and nothing is written through it)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.recorded_runs import finished_capacity_run


def test_a_probes_directory_linked_outside_an_earlier_merge_is_never_written_through(cli, tmp_path: Path) -> None:
    run = finished_capacity_run(tmp_path / "run")
    merged = tmp_path / "merged"
    first = cli("report", str(run), "--out", str(merged))
    assert first.returncode == 0, first.stdout + first.stderr
    probes = next(p for p in merged.rglob("probes") if p.is_dir())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(probes)
    probes.symlink_to(elsewhere)
    before = {p: p.read_bytes() for p in merged.rglob("*") if p.is_file() and not p.is_symlink()}
    done = cli("report", str(run), "--out", str(merged))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "probes" in lines[0] and "symlink" in lines[0], done.stderr
    assert list(elsewhere.iterdir()) == []
    assert {p: p.read_bytes() for p in before} == before  # nothing of the earlier merge rewritten
