"""``run --parallel 2`` without Slurm: two server groups of the tiny pair at once on this machine,
each on its own port and its own core (VLLM_CPU_OMP_THREADS_BIND 0 and 1), every point measured,
the EAGLE group's acceptance as the tiny pair makes it (k=3: acceptance length 4.0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime

import pytest

from tests.helpers import REPO, TWO_GROUPS_RUNBOOK

pytestmark = pytest.mark.engine


def test_two_groups_at_once_on_disjoint_cores(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("--parallel 2 on the CPU build needs two cores")
    (tmp_path / "two_groups.yaml").write_text(TWO_GROUPS_RUNBOOK)
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "llama4spec", "run", str(tmp_path / "two_groups.yaml"),
                           "--parallel", "2", "--runs-dir", str(runs), "-q"], capture_output=True, text=True,
                          timeout=1200, cwd=REPO, env=dict(os.environ, COLUMNS="160"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run_dir,) = [d for d in runs.glob("two_groups/*") if d.is_dir()]
    status = json.loads((run_dir / "status.json").read_text())
    jobs = {j["group"]: j for j in status["jobs"]}
    assert set(jobs) == {"sweep-none", "sweep-tiny_eagle"} and {j["state"] for j in jobs.values()} == {"done"}
    binds = {j["devices"]["VLLM_CPU_OMP_THREADS_BIND"] for j in jobs.values()}
    assert binds == {"0", "1"}, binds
    t = {g: (datetime.fromisoformat(j["start"]), datetime.fromisoformat(j["end"])) for g, j in jobs.items()}
    (a0, a1), (b0, b1) = t.values()
    assert a0 < b1 and b0 < a1, t  # at the same time
    ports = set()
    for group in jobs:
        plan = json.loads((run_dir / "groups" / group / "plan.json").read_text())
        ports.add(next(s["url"] for s in plan if s["id"] == group))
        where = json.loads((run_dir / "groups" / group / "job.json").read_text())
        assert where["devices"]["VLLM_CPU_OMP_THREADS_BIND"] == jobs[group]["devices"]["VLLM_CPU_OMP_THREADS_BIND"]
    assert len(ports) == 2, ports
    eagle = json.loads((run_dir / "groups" / "sweep-tiny_eagle" / "sweep-tiny_eagle-c4" / "record.json").read_text())
    assert eagle["acceptance"]["mean_acceptance_length"] == 4.0
    assert json.loads((run_dir / "groups" / "sweep-none" / "sweep-none-c4" / "record.json").read_text())["returncode"] == 0
    # the merged report records that the two groups ran beside each other (same co-location: no warning)
    analysis = json.loads((run_dir / "sweep" / "sweep.json").read_text())
    assert analysis["colocation"]["beside"] == {"sweep-none-c4": ["sweep-tiny_eagle"],
                                                "sweep-tiny_eagle-c4": ["sweep-none"]}, analysis.get("colocation")
    assert analysis["colocation"]["warnings"] == []
