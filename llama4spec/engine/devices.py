"""Which devices a server may use, and how two servers share them (an interleaved sweep's baseline
beside its candidate). Pure but for reading this process's environment and affinity.

On GPUs a server takes ``CUDA_VISIBLE_DEVICES``; on the CPU build ``VLLM_CPU_OMP_THREADS_BIND``
(one core set per tensor-parallel rank, ``|`` between ranks). Two servers on disjoint sets are
each given half: on GPUs exactly TP x PP devices each, on the CPU build an equal share of the cores.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Mapping

CPU_BIND = "VLLM_CPU_OMP_THREADS_BIND"
GPU_LIST = "CUDA_VISIBLE_DEVICES"
SLOTS = 2  # an interleaved pair: the baseline's devices (slot 0) and the candidate's (slot 1)


def ranges(ids: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5`` (Slurm's and VLLM_CPU_OMP_THREADS_BIND's spelling)."""
    out: list[str] = []
    ids = sorted(set(ids))
    start = prev = None
    for i in ids + [None]:
        if start is not None and i is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = i
    return ",".join(out)


MAX_IDS = 65_536  # device ids a range may name (a node has far fewer cores)


def expand_ranges(text: str) -> list[int]:
    """``0-2,5`` -> ``[0, 1, 2, 5]`` (ValueError beyond MAX_IDS ids or for text that is no range)."""
    ids: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        a, dash, b = part.partition("-")
        if dash and not b.strip():
            raise ValueError(f"{part!r} is an open range")
        low, high = int(a), int(b or a)
        if high - low + len(ids) >= MAX_IDS:
            raise ValueError(f"{text[:40]!r} names more than {MAX_IDS} device ids")
        ids.extend(range(low, high + 1))
    return ids


def cpu_bind(cores: list[int], ranks: int) -> str:
    """VLLM_CPU_OMP_THREADS_BIND for ``ranks`` workers on ``cores``: an equal share each, '|' between
    ranks (``0|1`` for TP 2 on two cores)."""
    if ranks < 1 or len(cores) < ranks:
        raise ValueError(f"{ranks} ranks need at least {ranks} cores, got {len(cores)}")
    each = len(cores) // ranks
    return "|".join(ranges(cores[r * each:(r + 1) * each]) for r in range(ranks))


def machine_devices(device: str, environ: Mapping[str, str]) -> list[int]:
    """This machine's GPUs (CUDA_VISIBLE_DEVICES, else nvidia-smi) or the cores this process may use."""
    if device != "cuda":
        return sorted(os.sched_getaffinity(0))
    if environ.get(GPU_LIST):
        return [int(x) for x in environ[GPU_LIST].split(",") if x.strip().isdigit()]
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    out = subprocess.run([smi, "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True,
                         timeout=30).stdout
    return [int(x) for x in out.split() if x.isdigit()]


def cores_given(environ: Mapping[str, str]) -> list[int]:
    """The cores a group was given (its VLLM_CPU_OMP_THREADS_BIND, every rank's), else this
    process's affinity."""
    bind = environ.get(CPU_BIND, "")
    try:
        cores = [c for part in bind.split("|") for c in expand_ranges(part)]
    except ValueError:  # "auto", "nobind": vLLM's own choice, so the whole affinity
        cores = []
    return sorted(set(cores)) or sorted(os.sched_getaffinity(0))


@dataclass(frozen=True)
class Split:
    """Two servers' disjoint devices, or why they do not fit (``why``: the sequential fallback)."""

    device: str  # cuda | cpu
    sets: tuple[tuple[int, ...], ...] = ()  # slot -> its devices (empty when they do not fit)
    why: str | None = None

    def env(self, slot: int, per_node: int) -> dict[str, str]:
        """The environment that gives slot ``slot`` its devices."""
        ids = list(self.sets[slot])
        if self.device == "cuda":
            return {GPU_LIST: ",".join(map(str, ids))}
        return {CPU_BIND: cpu_bind(ids, per_node)}

    def text(self, slot: int) -> str:
        unit = "GPU" if self.device == "cuda" else "core"
        ids = self.sets[slot]
        return f"{unit}{'s' if len(ids) != 1 else ''} {ranges(list(ids))}"


def split(device: str, per_node: int, devices_per_node: int, environ: Mapping[str, str]) -> Split:
    """Two disjoint device sets for two servers of ``per_node`` ranks each (TP x PP): on GPUs the
    node's ``devices_per_node`` (hardware) or CUDA_VISIBLE_DEVICES, TP x PP each; on the CPU build
    the cores given (``cores_given``), halved. ``why`` says when two copies do not fit."""
    if device == "cuda":
        have = [int(x) for x in environ.get(GPU_LIST, "").split(",") if x.strip().isdigit()] \
            or list(range(devices_per_node))
        if len(have) < SLOTS * per_node:
            return Split(device, why=f"two servers of {per_node} GPU{'s' if per_node != 1 else ''} each need "
                                     f"{SLOTS * per_node} GPUs; this node has {len(have)}")
        return Split(device, (tuple(have[:per_node]), tuple(have[per_node:SLOTS * per_node])))
    have = cores_given(environ)
    half = len(have) // SLOTS
    if half < per_node:
        return Split(device, why=f"two servers of {per_node} rank{'s' if per_node != 1 else ''} each need "
                                 f"{SLOTS * per_node} cores; this process has {len(have)}")
    return Split(device, (tuple(have[:half]), tuple(have[half:SLOTS * half])))
