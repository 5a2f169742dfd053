"""Engines and servers shared by several engine test files (vLLM's CPU build, the tiny pair).

An engine start costs 30-60 s here, so each fixture below starts once per session and several
files read it:

- ``imperfect_server``: ``llama4spec serve`` with the imperfect EAGLE draft (k=3), as a user runs
  it. Tests read it only through before/after counter deltas (every benchmark record's
  acceptance is the ``/metrics`` delta around its own run), so they cannot disturb each other.
  Used by test_categories_engine.py, test_serving_engine.py and test_requests_engine.py.
- ``perfect_offline``: one runbook ``offline`` step of the perfect pair with
  ``offline.baseline=true`` (EAGLE k=3, then the same prompts without a draft), run at ``-v`` so
  vLLM's own start-up log is kept. Used by test_offline_engine.py, test_runbook_offline_engine.py
  and test_preflight_engine.py.
- ``imperfect_offline``: ``llama4spec offline`` with the imperfect draft and
  ``offline.by_category=true``. Used by test_offline_engine.py and test_categories_engine.py.
- ``sequential_run``: one runbook of two ``repeats: auto`` sweeps, the second with ``revisit:
  true``. Used by test_decisive_engine.py and test_revisit_engine.py.

A test that signals, kills or reconfigures a server starts its own.

The lane runs on two pytest-xdist workers (``-n 2 --dist loadscope --no-loadscope-reorder``; most
of an engine test's wall time is one process at a time: imports, start-up, one request loop).
Each test is in a group that one worker runs whole (``pytest_xdist_make_scheduler``): the tests
that share a session fixture above are in one group (``GROUPS``, ``SPLIT``), every other file is a
group of its own (its module-scoped run stays on one worker). Groups are handed out longest first (``COST``: seconds
measured on one worker), so the two workers end about together.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from tests.helpers import free_port, run_cli, run_dir_of, sessions_below, wait_gone

K = 3
OFFLINE_TOKENS = 64
PERFECT_PROMPTS = 4
IMPERFECT_PROMPTS = 8
KV_GIB = 1  # the perfect run's KV cache space (memory.cpu_kvcache_space_gib), which the planner predicts


# The files that read the session fixtures above, in two groups so that each fixture starts once:
# the offline engines, and the shared server (the category tests read both: their offline tests go
# with the first, their served tests with the second; the lossless check's served test goes with the
# shared server).
OFFLINE_GROUP, SERVER_GROUP, SEQUENTIAL_GROUP = "offline-engines", "shared-server", "sequential-sweeps"
GROUPS = {"test_offline_engine": OFFLINE_GROUP, "test_runbook_offline_engine": OFFLINE_GROUP,
          "test_preflight_engine": OFFLINE_GROUP, "test_serving_engine": SERVER_GROUP,
          "test_requests_engine": SERVER_GROUP, "test_prefix_hits_engine": SERVER_GROUP,
          "test_decisive_engine": SEQUENTIAL_GROUP,
          "test_revisit_engine": SEQUENTIAL_GROUP}
SPLIT = {"test_categories_engine": (("test_offline_", OFFLINE_GROUP), ("", SERVER_GROUP)),
         "test_lossless_engine": (("test_served_", SERVER_GROUP),)}
HERE = Path(__file__).resolve().parent
# Seconds a group took on one of the two workers of a clean-clone CI run (a group not listed is
# taken as short): the order the groups are handed out in.
COST = {SERVER_GROUP: 420, OFFLINE_GROUP: 380, "test_capacity_engine": 340, "test_sweep_engine": 290,
        SEQUENTIAL_GROUP: 360, "test_sweep_failures_engine": 185, "test_sampling_engine": 175,
        "test_fault_campaign_engine": 175, "test_multinode_engine": 150, "test_lossless_engine": 200,
        "test_slurm_engine": 130, "test_faults_engine": 130, "test_interleaved_engine": 175,
        "test_parallel_engine": 100, "test_calibrate_engine": 240, "test_methods_engine": 200,
        "test_prefix_caching_engine": 90, "test_bands_engine": 200}


def group_of(nodeid: str) -> str:
    """The group of an engine test, from its id (``tests/engine/test_x_engine.py::test_y``)."""
    path, _, name = nodeid.partition("::")
    module = Path(path).stem
    for prefix, group in SPLIT.get(module, ()):
        if name.startswith(prefix):
            return group
    return GROUPS.get(module, module)


def pytest_xdist_make_scheduler(config, log):
    """xdist's scheduler by scope, with a group (``group_of``) as the scope: each group runs whole on
    one worker, handed out in the order of the collection (``--no-loadscope-reorder``)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return ByGroup(config, log)


def pytest_collection_modifyitems(config, items) -> None:
    """The engine tests by group, the groups longest first (``COST``), each in file order."""
    mine = [item for item in items if Path(str(item.path)).resolve().parent == HERE]
    if len(mine) < len(items):  # collected beside other tests: left in their order
        return
    first: dict[str, int] = {}
    for item in items:
        first.setdefault(group_of(item.nodeid), len(first))
    items.sort(key=lambda item: (-COST.get(group_of(item.nodeid), 0), first[group_of(item.nodeid)]))


@dataclass
class Serving:
    """A ``llama4spec serve`` process that is ready."""

    url: str
    proc: subprocess.Popen
    out: Path  # the command's own output (not a terminal)
    log: Path  # the server's log
    sessions: set[int]  # the server's (and its engine's) sessions

    def output(self) -> str:
        return self.out.read_text(errors="replace")


@contextlib.contextmanager
def serving(overrides: list[str], where: Path, timeout: float = 600) -> Iterator[Serving]:
    """Start ``llama4spec serve OVERRIDES`` on a free port and wait until it serves; stop it with
    Ctrl-C (SIGINT) at the end and wait until none of its processes is left."""
    from llama4spec.serving.process import is_healthy

    where.mkdir(parents=True, exist_ok=True)
    port = free_port()
    out, log = where / "serve.out", where / "server.log"
    with open(out, "w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "llama4spec", "serve", *overrides, f"serve.port={port}",
                                 "--log", str(log)], cwd=where, stdout=sink, stderr=subprocess.STDOUT,
                                env={**os.environ, "COLUMNS": "160"}, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    sessions: set[int] = set()
    try:
        deadline = time.monotonic() + timeout
        while not (is_healthy(url, timeout_s=2) and "serving" in out.read_text()):
            if proc.poll() is not None:
                pytest.fail(f"llama4spec serve exited with {proc.returncode}:\n{out.read_text()[-4000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"llama4spec serve was not ready within {timeout:.0f} s:\n{out.read_text()[-4000:]}")
            sessions |= sessions_below(proc.pid)
            time.sleep(0.5)
        sessions |= sessions_below(proc.pid)
        yield Serving(url, proc, out, log, sessions)
    finally:
        sessions |= sessions_below(proc.pid)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        wait_gone(sessions, timeout=30)


@pytest.fixture(scope="session")
def imperfect_server(tmp_path_factory, tiny_dir) -> Iterator[Serving]:
    with serving(["draft=tiny_eagle_imperfect", f"lookahead={K}"], tmp_path_factory.mktemp("imperfect-server")) as s:
        yield s


OFFLINE_RUNBOOK = f"""\
# llama4spec run offline_perfect.yaml
name: offline_perfect
description: the perfect tiny pair offline, EAGLE k={K} and the same prompts without a draft
overrides: [target=tiny, memory=cpu, memory.cpu_kvcache_space_gib={KV_GIB}, lookahead={K}]
steps:
  - id: perfect
    kind: offline
    overrides: [draft=tiny_eagle, offline.baseline=true, dataset.num_prompts={PERFECT_PROMPTS},
                generation.max_tokens={OFFLINE_TOKENS}]
"""


SEQUENTIAL_RUNBOOK = """\
name: sequential
env:
  VLLM_CPU_KVCACHE_SPACE: "1"
overrides: [target=tiny, memory=cpu, bench=random_tiny, bench.num_prompts=8, bench.output_len=64, serve.port=8761]
steps:
  - id: perfect
    kind: sweep
    matrix: {draft: [none, tiny_eagle], lookahead: [3], bench.max_concurrency: [1]}
    repeats: auto
    max_repeats: 4
    extra_args: [--ignore-eos]
  - id: sweep
    kind: sweep
    needs: [perfect]
    matrix: {draft: [none, tiny_eagle_imperfect], lookahead: [2], bench.max_concurrency: [4]}
    repeats: auto
    max_repeats: 6
    revisit: true
    warmup: 2
    extra_args: [--ignore-eos]
"""


@pytest.fixture(scope="session")
def sequential_run(tmp_path_factory, tiny_dir) -> tuple[Path, Path]:
    """One run of two sweeps measured until decided (``repeats: auto``), read by the decisive and the
    revisit tests: ``perfect``, the perfect pair's k=3 against no speculation at concurrency 1 (a clear
    difference, at most 4 runs a point), then ``sweep``, no speculation against the imperfect pair's
    k=2 at concurrency 4 with ``revisit: true`` (a gap one server start per setting leaves undecided,
    at most 6 runs a point, each server started at most twice). 4 to 6 server starts in all."""
    base = tmp_path_factory.mktemp("sequential")
    runbook = base / "sequential.yaml"
    runbook.write_text(SEQUENTIAL_RUNBOOK)
    done = run_cli("run", str(runbook), "--runs-dir", str(base / "runs"), timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run_dir,) = (base / "runs" / "sequential").iterdir()
    return runbook, run_dir


@dataclass
class OfflineRun:
    stdout: str
    stderr: str  # at -v: vLLM's own log
    record: dict
    run_dir: Path


@pytest.fixture(scope="session")
def perfect_offline(tmp_path_factory, tiny_dir) -> OfflineRun:
    base = tmp_path_factory.mktemp("perfect-offline")
    (base / "offline_perfect.yaml").write_text(OFFLINE_RUNBOOK)
    res = run_cli("run", str(base / "offline_perfect.yaml"), "--runs-dir", str(base / "runs"), "-v", timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run_dir = run_dir_of(base / "runs")
    return OfflineRun(res.stdout, res.stderr, json.loads((run_dir / "perfect" / "record.json").read_text()), run_dir)


@pytest.fixture(scope="session")
def imperfect_offline(tmp_path_factory, tiny_dir) -> tuple[str, dict]:
    path = tmp_path_factory.mktemp("imperfect-offline") / "run.json"
    res = run_cli("offline", "draft=tiny_eagle_imperfect", "offline.by_category=true", f"lookahead={K}",
                  f"generation.max_tokens={OFFLINE_TOKENS}", f"dataset.num_prompts={IMPERFECT_PROMPTS}",
                  "--json", str(path))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout, json.loads(path.read_text())
