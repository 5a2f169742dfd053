"""Server groups as Slurm jobs on a real one-node Slurm (scripts/slurm-local.sh: Debian's slurm-wlm
and MUNGE, started here when not running and stopped at the end), with the tiny pair on vLLM's
CPU build:

- two groups (no draft, EAGLE k=3) run as two jobs of one CPU each, at the same time; every point
  of the runbook's plan is there, and the EAGLE group's acceptance counters equal what the
  simulation of greedy EAGLE (tests/tiny_sim.py) predicts, exactly; a token planted in the
  environment appears nowhere on disk;
- Ctrl-C of the submitting command cancels both jobs and leaves no vLLM process;
- a job that fails is reported with its log tail, and --resume re-submits only its group.

Needs root (to start the daemons) or a running Slurm; ``.ci/run`` installs the packages.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.helpers import REPO, TWO_GROUPS_RUNBOOK

pytestmark = pytest.mark.engine

TOKEN = "hf_plantedSlurmToken7Qx2"  # must appear in no file the run writes
GROUPS = ["sweep-none", "sweep-tiny_eagle"]
POINTS = {"sweep-none": "sweep-none-c4", "sweep-tiny_eagle": "sweep-tiny_eagle-c4"}
SLURM = ["cluster=slurm_local", "--launcher", "slurm"]


def _sinfo_ok() -> bool:
    try:
        done = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and any(s in done.stdout for s in ("idle", "mix", "alloc"))


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A Slurm that takes jobs: the running one, or one started here (and stopped at the end)."""
    if _sinfo_ok():
        yield None
        return
    if os.geteuid() != 0:
        pytest.skip("no Slurm answers (sinfo) and starting one needs root; run scripts/slurm-local.sh start as root")
    if not shutil.which("slurmctld") and not Path("/usr/sbin/slurmctld").exists():
        pytest.skip("Slurm is not installed (Debian: apt-get install slurm-wlm munge; scripts/ci-system-deps.sh does)")
    pids = tmp_path_factory.mktemp("slurm") / "daemons.pids"
    start = subprocess.run(["bash", str(REPO / "scripts" / "slurm-local.sh"), "start", str(pids)],
                           capture_output=True, text=True, timeout=120)
    try:
        assert start.returncode == 0, f"slurm-local.sh start failed:\n{start.stdout}\n{start.stderr}"
        yield pids
    finally:
        subprocess.run(["bash", str(REPO / "scripts" / "slurm-local.sh"), "stop", str(pids)], timeout=60)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("slurm-runs")
    (d / "two_groups.yaml").write_text(TWO_GROUPS_RUNBOOK)
    return d


def llama4spec(workdir: Path, *args: str, timeout: float = 1200) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ, COLUMNS="160", HF_TOKEN=TOKEN)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "llama4spec", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env)
    return done, time.monotonic() - started


def run_dir_in(root: Path) -> Path:
    (run_dir,) = [d for d in root.glob("two_groups/*") if d.is_dir()]
    return run_dir


def record(path: Path) -> dict:
    return json.loads(path.read_text())


def stamp(text: str) -> float:
    return datetime.fromisoformat(text[:19]).timestamp()


def planned_points(workdir: Path) -> list[str]:
    """The bench points of the two-group runbook, as the planner names them (no engine)."""
    from llama4spec.runbook.plan import plan_file

    plan = plan_file(workdir / "two_groups.yaml", lambda name: workdir / "planned" / name)
    return [p.id for p in plan.steps if p.kind == "bench"]


def predicted_acceptance() -> dict:
    """The perfect pair's counters for the runbook's 8 requests of 32 tokens at k=3 (every draft
    accepted: the count does not depend on the random prompts' words)."""
    from llama4spec.offline.prompts import builtin_prompts
    from tests import tiny_sim

    return tiny_sim.predict(builtin_prompts(8), 32, 3, tiny_sim.perfect).record()


def _group_process(runs: Path, group: str) -> int | None:
    """The ``llama4spec run --only-group GROUP`` process a job runs for this run, if any."""
    for entry in os.listdir("/proc"):
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--only-group" in cmd and group.encode() in cmd and str(runs).encode() in b" ".join(cmd):
            return int(entry)
    return None


@pytest.fixture(scope="module")
def as_jobs(slurm, workdir):
    """The two groups submitted as two jobs; the EAGLE group's run dies in its job (SIGKILL, as on a
    node that fails) once its server is starting, the other group finishes; then ``--resume``
    re-submits the failed group alone. One submission and one resume measure both the jobs'
    parallel run and the failure path (before, a second submission of both groups did)."""
    runs = workdir / "jobs"
    env = dict(os.environ, COLUMNS="160", HF_TOKEN=TOKEN)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "llama4spec", "run", str(workdir / "two_groups.yaml"), *SLURM,
                             "--runs-dir", str(runs)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        deadline = time.monotonic() + 300
        victim = None
        while time.monotonic() < deadline:  # the group's record is there and its server is starting
            victim = _group_process(runs, "sweep-tiny_eagle")
            dirs = [d for d in runs.glob("two_groups/*") if d.is_dir()]
            job = dirs[0] / "groups" / "sweep-tiny_eagle" / "job.json" if dirs else None
            if victim and job and job.is_file():
                ids = {str(record(job)["slurm_job_id"])}
                if _vllm_in_jobs(ids):
                    break
            assert proc.poll() is None, proc.communicate()
            time.sleep(1)
        assert victim, "the EAGLE group's job did not start its server"
        first_jobs = {g: record(p) for g in GROUPS if (p := dirs[0] / "groups" / g / "job.json").is_file()}
        os.kill(victim, signal.SIGKILL)
        out, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    run_dir = run_dir_in(runs)
    first = {"returncode": proc.returncode, "stdout": out, "stderr": err, "status": record(run_dir / "status.json"),
             "job_json": {**first_jobs, "sweep-none": record(run_dir / "groups" / "sweep-none" / "job.json")},
             "submitted": set((run_dir / "slurm").glob("*_submission.sh"))}
    resumed, _ = llama4spec(workdir, "run", str(workdir / "two_groups.yaml"), *SLURM, "--resume", str(run_dir))
    return run_dir, time.monotonic() - started, first, resumed


def test_two_groups_run_as_two_jobs_at_the_same_time(as_jobs):
    run_dir, seconds, first, resumed = as_jobs
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    status = record(run_dir / "status.json")
    assert status["launcher"] == "slurm" and status["status"] == "done"
    jobs = {j["group"]: j for j in status["jobs"]}
    assert set(jobs) == set(GROUPS) and all(j["state"] == "done" for j in jobs.values())
    assert len({j["job_id"] for j in jobs.values()}) == 2
    # the first submission: both jobs at once, each on its own core of the allocation
    before = {j["group"]: j for j in first["status"]["jobs"]}
    a, b = (before[g] for g in GROUPS)
    assert stamp(a["start"]) < stamp(b["end"]) and stamp(b["start"]) < stamp(a["end"]), before  # they overlapped
    binds = {first["job_json"][g]["devices"]["VLLM_CPU_OMP_THREADS_BIND"] for g in GROUPS}
    assert binds == {"0", "1"}, binds  # disjoint cores from the allocation
    for g in GROUPS:  # where each ran: job id, node, start and end
        where = record(run_dir / "groups" / g / "job.json")
        assert where["job_id"] == jobs[g]["job_id"] and where["node"] and where["exit"] == 0
        assert where["started"] and where["finished"]
    print(f"\ntwo groups as two Slurm jobs: {seconds:.1f} s wall; submission {status['submit_seconds']:.3f} s "
          f"for 2 jobs")


def test_every_point_is_there_and_acceptance_equals_the_sequential_run(as_jobs, workdir):
    """Every point of the plan was measured, and the EAGLE group's counters are the prediction that
    a sequential run of the same runbook also equals (it did, exactly, when both were measured)."""
    run_dir, _, _, _ = as_jobs
    points = planned_points(workdir)
    assert sorted(points) == sorted(POINTS.values())
    for group, point in POINTS.items():
        mine = record(run_dir / "groups" / group / point / "record.json")
        assert mine["returncode"] == 0 and mine["result"]["completed"] == 8
        if group == "sweep-tiny_eagle":
            expected = predicted_acceptance()
            assert {key: mine["acceptance"][key] for key in expected} == expected, mine["acceptance"]
            assert mine["acceptance"]["mean_acceptance_length"] == 4.0
        else:
            assert mine["acceptance"] is None
    job_points = {p["id"] for g in GROUPS for p in record(run_dir / "groups" / g / "plan.json") if p["kind"] == "bench"}
    assert job_points == set(points)
    merged = run_dir / "sweep" / "sweep.csv"  # the merged report (llama4spec report): a row per point and run
    rows = sorted((r["id"], r["run"], r["repeats"], r["warmup"]) for r in csv.DictReader(io.StringIO(merged.read_text())))
    assert {r["setting"] for r in csv.DictReader(io.StringIO(merged.read_text()))} == {"no speculation", "tiny_eagle k=3"}
    assert rows == sorted((point, "0", "1", "0") for point in points)


def test_no_secret_reaches_the_submitit_folder_the_logs_or_the_records(as_jobs):
    run_dir, _, first, resumed = as_jobs
    assert (run_dir / "slurm").is_dir() and list((run_dir / "slurm").glob("*_submitted.pkl"))
    leaks = [str(p) for p in run_dir.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    assert not leaks, leaks
    assert TOKEN not in first["stdout"] + first["stderr"] + resumed.stdout + resumed.stderr


def _our_jobs(name: str) -> list[str]:
    done = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i %T"], capture_output=True, text=True, timeout=30)
    return [line for line in done.stdout.splitlines() if line.strip()]


def _vllm_in_jobs(job_ids: set[str]) -> list[int]:
    """vLLM processes started by these Slurm jobs (their environment names the job)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        ids = {e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"SLURM_JOB_ID=")}
        if b"vllm" in cmd and ids & job_ids:
            found.append(int(entry))
    return found


def _states(run_dir: Path) -> dict[str, str]:
    try:
        return {j["group"]: j["state"] for j in record(run_dir / "status.json").get("jobs", [])}
    except (OSError, ValueError):
        return {}


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_cancels_both_jobs_and_leaves_no_vllm(slurm, workdir):
    runs = workdir / "interrupted"
    proc = subprocess.Popen([sys.executable, "-m", "llama4spec", "run", str(workdir / "two_groups.yaml"), *SLURM,
                             "--runs-dir", str(runs), "-q"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, HF_TOKEN=TOKEN),
                            preexec_fn=_default_sigint)
    try:
        deadline = time.monotonic() + 300
        job_ids: set[str] = set()
        while time.monotonic() < deadline:  # both jobs running, a vLLM server starting in each
            dirs = [d for d in runs.glob("two_groups/*") if d.is_dir()]
            if dirs and set(_states(dirs[0]).values()) == {"running"}:
                job_ids = {str(record(p)["slurm_job_id"]) for p in dirs[0].glob("groups/*/job.json")}
                if len(job_ids) == 2 and len(_vllm_in_jobs(job_ids)) >= 2:
                    break
            assert proc.poll() is None, proc.communicate()
            time.sleep(1)
        assert len(job_ids) == 2, "the two jobs did not start their servers in time"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert "cancelled" in out + err
    run_dir = run_dir_in(runs)
    assert set(_states(run_dir).values()) == {"cancelled"}, _states(run_dir)
    deadline = time.monotonic() + 60
    while (_our_jobs("l4s-two_groups") or _vllm_in_jobs(job_ids)) and time.monotonic() < deadline:
        time.sleep(1)
    assert not _our_jobs("l4s-two_groups")
    assert not _vllm_in_jobs(job_ids)


def test_a_failed_job_is_reported_and_resume_resubmits_only_its_group(as_jobs):
    run_dir, _, first, done = as_jobs
    out = first["stdout"]
    assert first["returncode"] == 1, out + first["stderr"]
    assert "group sweep-tiny_eagle" in out and "failed" in out and "  | " in out  # with its log tail
    assert "--resume" in out
    states = {j["group"]: j["state"] for j in first["status"]["jobs"]}
    assert states == {"sweep-none": "done", "sweep-tiny_eagle": "failed"}, states
    before = {j["group"]: j["job_id"] for j in first["status"]["jobs"]}

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "already measured in this run directory: sweep-none" in done.stdout
    status = record(run_dir / "status.json")
    jobs = {j["group"]: j for j in status["jobs"]}
    assert all(j["state"] == "done" for j in jobs.values())
    assert jobs["sweep-none"]["job_id"] == before["sweep-none"]  # kept, not re-run
    assert jobs["sweep-tiny_eagle"]["job_id"] != before["sweep-tiny_eagle"]
    new = set((run_dir / "slurm").glob("*_submission.sh")) - first["submitted"]
    assert len(new) == 1, new  # one job, for that group only
    eagle = record(run_dir / "groups" / "sweep-tiny_eagle" / "sweep-tiny_eagle-c4" / "record.json")
    assert eagle["acceptance"]["mean_acceptance_length"] == 4.0
