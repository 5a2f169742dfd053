"""serve.engine_nice: the processes two levels and more below a server's tethered process (under the
lifeline, the engine core and its workers) get the nice value, every thread; the levels above keep
theirs. Real processes, no engine."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

from llama4spec.serving.process import lower_descendants

# A process that starts a child that starts a grandchild with an extra thread, then all sleep.
TREE = """
import subprocess, sys, threading, time
depth = int(sys.argv[1])
if depth:
    subprocess.Popen([sys.executable, "-c", sys.argv[2], str(depth - 1), sys.argv[2]])
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
time.sleep(60)
"""


def _levels(root: psutil.Process, depth: int) -> list[list[psutil.Process]]:
    deadline = time.monotonic() + 20
    while True:
        levels, level = [[root]], [root]
        for _ in range(depth):
            level = [c for p in level for c in p.children()]
            levels.append(level)
        if all(levels) and all(len(p.threads()) >= 2 for lv in levels for p in lv) or time.monotonic() > deadline:
            return levels
        time.sleep(0.1)


def test_the_engine_levels_get_the_nice_value_every_thread_and_the_front_end_keeps_its() -> None:
    root = subprocess.Popen([sys.executable, "-c", TREE, "3", TREE])
    try:
        levels = _levels(psutil.Process(root.pid), 3)
        assert [len(lv) for lv in levels] == [1, 1, 1, 1]
        assert lower_descendants(root.pid, 7) == 2  # levels 2 and 3
        nice = [[os.getpriority(os.PRIO_PROCESS, t.id) for p in lv for t in p.threads()] for lv in levels]
        assert set(nice[0]) == set(nice[1]) == {os.getpriority(os.PRIO_PROCESS, 0)}
        assert set(nice[2]) == set(nice[3]) == {7} and len(nice[3]) >= 2
        assert lower_descendants(root.pid, 3) == 2  # never raised back: a nicer thread keeps its value
        assert {os.getpriority(os.PRIO_PROCESS, t.id) for t in levels[3][0].threads()} == {7}
    finally:
        for p in psutil.Process(root.pid).children(recursive=True):
            p.kill()
        root.kill()
        root.wait()


def test_a_process_that_is_gone_changes_nothing() -> None:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    assert lower_descendants(done.pid, 10) == 0
