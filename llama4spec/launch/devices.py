"""Devices and hosts of a group, from what this machine or the Slurm allocation says. Pure."""

from __future__ import annotations

import re

from llama4spec.engine.devices import cpu_bind, expand_ranges
from llama4spec.runbook.groups import Shape


def slots(devices: list[int], shape: Shape, parallel: int) -> list[list[int]]:
    """Split this machine's devices into ``parallel`` disjoint sets for groups of ``shape``: on GPUs
    each set holds exactly the group's TP x PP devices; on the CPU build an equal share of the
    cores (at least one per rank). Fewer sets when the devices do not stretch that far."""
    size = shape.per_node if shape.device == "cuda" else max(shape.per_node, len(devices) // max(1, parallel))
    return [devices[i * size:(i + 1) * size] for i in range(min(parallel, len(devices) // size))]


def device_env(shape: Shape, devices: list[int]) -> dict[str, str]:
    """The environment that gives a group its devices."""
    if shape.device == "cuda":
        return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, devices))}
    return {"VLLM_CPU_OMP_THREADS_BIND": cpu_bind(devices, shape.per_node)}


CPU_IDS = re.compile(r"\bNodes=(\S+) CPU_IDs=([\d,\-]+)")


def job_cpus(scontrol_detail: str, node: str) -> list[int]:
    """The CPU ids a job holds on ``node``, from ``scontrol show job -d JOBID`` (empty if not listed)."""
    for nodes, ids in CPU_IDS.findall(scontrol_detail):
        if node in hostnames_inline(nodes):
            return expand_ranges(ids)
    return []


def hostnames_inline(nodelist: str) -> list[str]:
    """A simple Slurm node list (``a,b`` or ``node[1-3,7]``) without asking scontrol."""
    out: list[str] = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?", nodelist):
        prefix, inner = m[1], m[2]
        if not inner:
            out.append(prefix)
            continue
        for part in inner.split(","):
            a, _, b = part.partition("-")
            width = len(a)
            out.extend(f"{prefix}{i:0{width}d}" for i in range(int(a), int(b or a) + 1))
    return out


def hosts_override(names: list[str], addresses: dict[str, str]) -> str:
    """The override that lists the allocation's nodes as ``cluster.hosts`` (leader first): each
    host's address as resolved on the cluster, its Slurm name where followers start (srun
    --nodelist={host})."""
    items = ",".join(f"{{address:'{addresses.get(n, n)}',ssh:'{n}'}}" for n in names)
    return f"cluster.hosts=[{items}]"
