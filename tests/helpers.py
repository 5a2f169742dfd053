"""Helpers shared by tests: running the CLI as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, timeout: float = 900, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m llama4spec ARGS`` and capture its output (argv list, no shell)."""
    full_env = dict(os.environ, COLUMNS="160", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "llama4spec", *args],
        capture_output=True, text=True, timeout=timeout, cwd=REPO, env=full_env,
    )


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, never handed out before in this
    process, from a range of this pytest-xdist worker's own below the kernel's ephemeral ports
    (32768 on): a port a test lets go between two server starts cannot be taken meanwhile by a
    test on the other worker, nor by the kernel for anything's bind to port 0."""
    import random
    import socket

    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) + 1 if worker.startswith("gw") and worker[2:].isdigit() else 0
    low = 12000 + 2000 * (index % 10)
    for _ in range(1000):
        port = random.randrange(low, low + 2000)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise RuntimeError(f"no free port in {low}-{low + 1999}")


# -- processes: what a command left behind ---------------------------------------------------
def _processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, session id, state) for every process (from /proc)."""
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        procs[int(entry)] = (int(fields[1]), int(fields[3]), fields[0])
    return procs


def sessions_below(root: int) -> set[int]:
    """Session ids of every live descendant of ``root`` (servers and benchmarks lead their own)."""
    procs = _processes()
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, (ppid, _, _) in procs.items() if ppid in frontier}
        found |= {procs[pid][1] for pid in frontier}
    return found - {procs.get(root, (0, 0, ""))[1]}


def cmdlines() -> dict[int, str]:
    """pid -> command line (arguments joined by spaces) for every process (from /proc)."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                out[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                pass
    return out


def alive_in(sessions: set[int]) -> list[int]:
    return [pid for pid, (_, sid, state) in _processes().items() if sid in sessions and state != "Z"]


def wait_gone(sessions: set[int], timeout: float = 20) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := alive_in(sessions)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def listening(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts connections on ``port`` (a server's closed connections may still
    sit in TIME_WAIT there, which a bind would mistake for a listener)."""
    import socket

    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


def bench_started(runs: Path, step: str) -> bool:
    """Whether vLLM's benchmark of step ``step`` has begun under ``runs`` (a runs directory): it
    prints its arguments, its label among them, when it starts (in the run's benchmark worker)."""
    for log in runs.glob(f"*/*/{step}/bench.log"):
        try:
            if f"label='{step}'" in log.read_text(errors="replace"):
                return True
        except OSError:
            pass
    return False


def run_dir_of(runs: Path) -> Path:
    (run_dir,) = [d for d in runs.glob("*/*") if d.is_dir()]
    return run_dir


def png_series(path: Path) -> list[str] | None:
    """The series labels a sweep plot stores in its PNG's text metadata (None if absent)."""
    import json

    from PIL import Image  # a dependency of matplotlib

    from llama4spec.analysis.plots import SERIES_KEY

    with Image.open(path) as image:
        assert image.format == "PNG", f"{path}: {image.format}, not PNG"
        text = image.text.get(SERIES_KEY)
    return None if text is None else json.loads(text)


# -- model directories with a changed config.json ---------------------------------------------
DROP = object()  # as a value in ``edited``: remove the key


def edited(src: Path, dst: Path, **changes) -> Path:
    """A copy of a model directory with config.json keys changed (DROP removes a key)."""
    import json
    import shutil

    shutil.copytree(src, dst)
    config = json.loads((dst / "config.json").read_text())
    for key, value in changes.items():
        if value is DROP:
            config.pop(key, None)
        else:
            config[key] = value
    (dst / "config.json").write_text(json.dumps(config))
    return dst


# Two server groups of the tiny pair (no draft, EAGLE k=3), one benchmark each: the launcher tests' sweep.
TWO_GROUPS_RUNBOOK = """\
name: two_groups
description: the tiny pair without a draft and with EAGLE k=3, one server each
env:
  VLLM_CPU_KVCACHE_SPACE: "1"
overrides: [target=tiny, memory=cpu, bench=random_tiny, bench.num_prompts=8, bench.output_len=32, lookahead=3]
steps:
  - id: sweep
    kind: sweep
    matrix:
      draft: [none, tiny_eagle]
      bench.max_concurrency: [4]
    repeats: 1
    extra_args: [--ignore-eos]
"""


# The one place a test may reach vLLM's CPU kernels or name an instruction set
# (tests/unit/test_cpu_neutral.py fails the suite on any other): the CPU wheel ships three kernel
# libraries (``_C``: AVX-512 with BF16, ``_C_AVX512``, ``_C_AVX2``) and vLLM's platform picks one from
# the CPU's flags. Importing one by name runs its instructions whatever the CPU: on an AVX2-only
# machine ``import vllm._C`` dies with "Illegal instruction", taking the test process with it.
def vllm_cpu_kernels(as_avx2_only: bool = False):
    """``torch.ops._C`` after vLLM's CPU platform loaded the kernel library that fits this CPU
    (``vllm/platforms/cpu.py: import_kernels``); skips where vLLM or its CPU platform is absent.
    ``as_avx2_only``: the platform is told the CPU lacks AVX-512, so it loads the AVX2 library (which
    any x86-64 CPU of this kind runs): for a process of its own, as it changes torch for the process."""
    import pytest

    pytest.importorskip("vllm")
    torch = pytest.importorskip("torch")
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        pytest.skip("vLLM's CPU kernels: not the CPU build")
    if as_avx2_only:
        torch.cpu._is_avx512_supported = lambda: False
    current_platform.import_kernels()
    return torch.ops._C



SCOUT_DESIGN = "    design: sequential\n    starts: 2\n    repeats: 3\n"


def scout_blocks_text() -> str:
    """The Scout sweep's runbook with back-to-back blocks added until decided (design: auto,
    repeats: auto) in place of its two sequential starts: what the blocks' tests plan."""
    text = (REPO / "runbooks" / "llama4_scout_eagle_sweep.yaml").read_text()
    assert SCOUT_DESIGN in text, "the Scout sweep's design lines moved: update tests/helpers.py"
    return text.replace(SCOUT_DESIGN, "    repeats: auto\n")
