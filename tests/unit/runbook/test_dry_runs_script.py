"""scripts/dry_runs.py, as docs/development.md has it run: every shipped runbook's dry run and
plan.json for both builds, the run directory fixed and the paths masked as tests/golden does (its
CPU dry run of the tiny runbook is the golden file byte for byte)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import REPO


def test_dry_runs_writes_every_runbook_masked_as_the_golden_files(tmp_path) -> None:
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "scripts/dry_runs.py", str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    runbooks = sorted(p.stem for p in (REPO / "runbooks").glob("*.yaml"))
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(f"{r}.{b}.{s}" for r in runbooks for b in ("cpu", "gpu")
                             for s in ("dry_run.txt", "plan.json"))
    assert f"{len(runbooks)} runbooks x 2 builds: {4 * len(runbooks)} files" in done.stdout
    golden = REPO / "tests" / "golden" / "runbook_tiny_cpu_eagle_vs_baseline.dry_run.txt"
    assert (out / "tiny_cpu_eagle_vs_baseline.cpu.dry_run.txt").read_text() == golden.read_text()
    plan = json.loads((out / "tiny_cpu_eagle_vs_baseline.cpu.plan.json").read_text())
    text = json.dumps(plan)
    assert "runs/RUNBOOK/TIMESTAMP" in text and str(REPO) not in text and sys.executable not in text
