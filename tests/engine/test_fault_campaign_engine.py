"""A fault campaign on a real sweep: faults injected at chosen moments, then ``--resume`` until the
run completes, and nothing lost.

The sweep: the tiny pair without speculation and with EAGLE k=3, concurrency 1 and 4, two runs a
point (4 prompts x 16 tokens). The runs directory is a small tmpfs where the machine allows
mounting one (root), so the disk can fill up; elsewhere that fault is skipped and said so.

The faults, in four cycles (killing the tool takes its servers down, so each cycle that measures
restarts one; the first cycle holds two faults):

1. ``run``: the vLLM server is SIGKILLed while its first benchmark runs; then llama4spec itself is
   SIGKILLed between steps (as the next server's step begins).
2. ``--resume``: a crash while a record is written (``tests/faults.py``: SIGKILL to itself after the
   temporary file is on disk, before the rename), at the resume's first ``status.json``.
3. ``--resume`` with the disk full: it stops with one line, no traceback.
4. ``--resume`` to completion; then ``report RUN_DIR`` gets SIGTERM while it writes ``summary.md``
   (paused before the rename), and runs again.

After each fault: every JSON record parses, no process of the run is left and the port is free. At
the end: every point holds exactly the runs asked for, and the report the last ``report`` rebuilt
from the records equals the one the run wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO, bench_started, cmdlines, free_port, listening, run_dir_of, sessions_below, wait_gone

pytestmark = pytest.mark.engine

REPEATS = 2
POINTS = ("sweep-none-k3-c1", "sweep-none-k3-c4", "sweep-tiny_eagle-k3-c1", "sweep-tiny_eagle-k3-c4")


def _runbook(where: Path, port: int) -> Path:
    path = where / "campaign.yaml"
    path.write_text(f"""\
name: campaign
env:
  VLLM_CPU_KVCACHE_SPACE: "1"
overrides: [target=tiny, memory=cpu, bench=random_tiny, bench.num_prompts=4, bench.output_len=16, serve.port={port}]
steps:
  - id: sweep
    kind: sweep
    matrix:
      draft: [none, tiny_eagle]
      lookahead: [3]
      bench.max_concurrency: [1, 4]
    repeats: {REPEATS}
    warmup: 0
    extra_args: [--ignore-eos]
""")
    return path


def _tmpfs(path: Path) -> bool:
    """Mount a 200 MB tmpfs at ``path`` (root only); False where the machine does not allow it."""
    path.mkdir(parents=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200m", "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


class Cycle:
    """One invocation of the tool, its output in a file, its processes remembered."""

    def __init__(self, where: Path, name: str, args: list[str], fault: str | None = None):
        self.out = where / f"{name}.out"
        tool = ["tests.faults", fault] if fault else ["llama4spec"]  # tests/faults.py: NAME:N:ACTION
        with open(self.out, "w") as sink:
            self.proc = subprocess.Popen([sys.executable, "-m", *tool, *args], cwd=REPO, stdout=sink,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         env={**os.environ, "COLUMNS": "160"})
        self.sessions: set[int] = set()

    def watch(self) -> None:
        """Remember the sessions of the tool and of everything it started (servers lead their own)."""
        if self.proc.poll() is None:
            self.sessions |= sessions_below(self.proc.pid) | {self.proc.pid}  # the tool leads its own session

    def wait_for(self, condition, what: str, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            self.watch()
            assert self.proc.poll() is None, f"the tool ended before {what}:\n{self.output()[-3000:]}"
            assert time.monotonic() < deadline, f"no {what} within {timeout:.0f} s:\n{self.output()[-3000:]}"
            time.sleep(0.2)
        self.watch()

    def finish(self, timeout: float = 900) -> int:
        try:
            while self.proc.poll() is None and timeout > 0:
                self.watch()
                time.sleep(0.5)
                timeout -= 0.5
            return self.proc.wait(timeout=1)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)

    def output(self) -> str:
        return self.out.read_text(errors="replace")


def _status(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _step(run_dir: Path, sid: str) -> str | None:
    return next((s.get("status") for s in _status(run_dir).get("steps", []) if s.get("id") == sid), None)


def _after_the_fault(cycle: Cycle, run_dir: Path, port: int) -> None:
    """Every JSON record parses; no process of the run is left; the port is free."""
    assert not wait_gone(cycle.sessions, timeout=30), "a server, engine or benchmark outlived the tool"
    deadline = time.monotonic() + 15
    while listening(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not listening(port)
    for path in run_dir.rglob("*.json"):
        json.loads(path.read_text())  # whole, or not there: never cut short


def test_faults_at_chosen_moments_lose_nothing(tmp_path: Path, tiny_dir) -> None:
    port = free_port()
    runbook = _runbook(tmp_path, port)
    runs = tmp_path / "runs"
    full_disk = _tmpfs(runs)
    injected: list[str] = []
    try:
        # 1. the server killed mid-benchmark, then the tool killed between steps
        first = Cycle(tmp_path, "1-run", ["run", str(runbook), "--runs-dir", str(runs)])
        first.wait_for(lambda: bench_started(runs, POINTS[0]), "first benchmark")
        server = next(pid for pid, c in cmdlines().items() if "vllm.entrypoints.openai.api_server" in c
                      and f"--port {port}" in c and "lifeline" not in c)
        os.killpg(os.getpgid(server), signal.SIGKILL)
        injected.append("vLLM server SIGKILL during a benchmark")
        run_dir = run_dir_of(runs)
        first.wait_for(lambda: _step(run_dir, "sweep-tiny_eagle-k3") == "running", "the next server's step")
        os.kill(first.proc.pid, signal.SIGKILL)
        injected.append("llama4spec SIGKILL between steps")
        assert first.finish() == -signal.SIGKILL
        assert _step(run_dir, POINTS[0]) == "failed", _status(run_dir)
        _after_the_fault(first, run_dir, port)

        # 2. a crash while a record is written: the earlier status.json stays whole
        before = (run_dir / "status.json").read_text()
        second = Cycle(tmp_path, "2-resume", ["run", str(runbook), "--resume", str(run_dir)],
                       fault="status.json:1:kill")
        assert second.finish() == -signal.SIGKILL
        injected.append("crash during a record write (status.json, before the rename)")
        assert (run_dir / "status.json").read_text() == before
        _after_the_fault(second, run_dir, port)

        # 3. the disk full: one line, no traceback, nothing started
        if full_disk:
            filler = runs / "filler"
            with open(filler, "wb") as f:
                try:
                    while True:
                        f.write(b"\0" * (1 << 20))
                except OSError:
                    pass
            third = Cycle(tmp_path, "3-resume-disk-full", ["run", str(runbook), "--resume", str(run_dir)])
            code = third.finish()
            filler.unlink()
            assert code != 0 and "Traceback" not in third.output(), third.output()[-3000:]
            assert "space" in third.output().lower(), third.output()[-3000:]
            injected.append("disk full at resume")
            _after_the_fault(third, run_dir, port)
        else:
            print("\nfault campaign: the disk-full fault is skipped (no tmpfs can be mounted here)")

        # 4. resumed to completion
        last = Cycle(tmp_path, "4-resume", ["run", str(runbook), "--resume", str(run_dir)])
        assert last.finish() == 0, last.output()[-3000:]
        _after_the_fault(last, run_dir, port)
        status = _status(run_dir)
        assert status["status"] == "done"
        written = {name: (run_dir / name).read_text() for name in ("summary.md", "sweep/report.md")}

        # report interrupted while it writes summary.md, then run again
        paused = run_dir / "summary.md.paused"
        report = Cycle(tmp_path, "5-report", ["report", str(run_dir)], fault="summary.md:1:pause")
        report.wait_for(paused.exists, "the report's pause before renaming summary.md", timeout=300)
        report.proc.send_signal(signal.SIGTERM)
        code = report.finish(timeout=60)
        injected.append("SIGTERM during report")
        paused.unlink()
        assert code != 0 and "Traceback" not in report.output(), report.output()[-3000:]
        assert (run_dir / "summary.md").read_text() == written["summary.md"]  # the earlier one, whole
        _after_the_fault(report, run_dir, port)
        again = Cycle(tmp_path, "6-report", ["report", str(run_dir)])
        assert again.finish(timeout=300) == 0, again.output()[-3000:]

        # nothing lost: every point with exactly the runs asked for; the rebuilt report is the run's
        from llama4spec.results.bench import read

        for point in POINTS:
            record = read(run_dir / point / "record.json")
            assert record is not None and len(record.counted_runs()) == REPEATS, point
        assert (run_dir / "sweep" / "report.md").read_text() == written["sweep/report.md"]
        leftovers = [p for p in run_dir.rglob("*") if p.name.endswith(".tmp")]
        print(f"\nfault campaign: {len(injected)} faults injected and survived ({'; '.join(injected)}); "
              f"{3 if full_disk else 2} resumes; points lost: 0; orphans: 0; temporary files left by the "
              f"crashes: {len(leftovers)}")
    finally:
        if full_disk:
            subprocess.run(["umount", "-l", str(runs)], capture_output=True)
