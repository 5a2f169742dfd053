"""The faults the engine fault campaign injects live in the tests (``tests/faults.py``): the shipped
package reads no fault setting, and the test-only wrapper still acts in a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
OLD_SEAM = "LLAMA4SPEC_FAULT_BEFORE_RENAME"
WRITE = "from llama4spec.files import write_json; write_json('r.json', {'new': 1})"


def _python(code: str, where: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=where, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_the_package_reads_no_fault_setting(tmp_path: Path) -> None:
    assert not [p for p in (REPO / "llama4spec").rglob("*.py") if OLD_SEAM in p.read_text()]
    (tmp_path / "r.json").write_text('{"old": 1}\n')
    done = _python(WRITE, tmp_path, env={OLD_SEAM: "r.json:1:kill"})
    assert done.returncode == 0, done.stderr
    assert '"new": 1' in (tmp_path / "r.json").read_text()


def test_the_test_fault_kills_before_the_rename_in_a_subprocess(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text('{"old": 1}\n')
    done = _python(f"import sys; sys.path.insert(0, {str(REPO)!r}); from tests.faults import install; "
                   f"install('r.json:1:kill'); {WRITE}", tmp_path)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert (tmp_path / "r.json").read_text() == '{"old": 1}\n'  # the earlier record, whole


def test_the_wrapper_runs_the_tool(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "tests.faults", "summary.md:1:pause", "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "usage" in done.stdout.lower(), done.stderr
