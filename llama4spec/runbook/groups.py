"""Server groups: the unit of work a launcher hands out. Pure: no I/O.

A group is one serve step with every bench and stop step against its server: start the server,
measure all of its points, stop it. A sweep already plans one group per distinct server. What
belongs to no group runs elsewhere: fetch and offline steps (and benches against a given url) on
the submitting side before the groups, compare and sweep report steps when the groups' results
merge.

A group whose server derives its lookahead schedule from other groups' points (a sweep's
``verify_schedule``) runs after them; its run reads their records where they lie.

    <RUN_DIR>/groups/<group>/   a complete run directory of one group (status.json, plan.json, ...)
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from llama4spec.errors import UserError
from llama4spec.runbook.spec import Runbook, Step

GROUPS_DIR = "groups"
SHARD = re.compile(r"^(\d+)/(\d+)$")


@dataclass(frozen=True)
class Shape:
    """What one job of a group asks for: ``per_node`` devices on each of ``nnodes`` nodes."""

    device: str  # cuda | cpu (hardware.device)
    per_node: int  # tensor x pipeline parallel ranks per node: GPUs, or cores on the CPU build
    nnodes: int = 1

    @property
    def label(self) -> str:
        unit = "GPU" if self.device == "cuda" else "CPU"
        text = f"{self.per_node} {unit}{'s' if self.per_node != 1 else ''}"
        return text if self.nnodes == 1 else f"{self.nnodes} nodes x {text}"


@dataclass
class Group:
    name: str  # the serve step's id: --only-group NAME, <RUN_DIR>/groups/NAME/
    steps: list[str]  # its serve, bench and stop steps, in plan order
    shape: Shape
    after: list[str] = field(default_factory=list)  # groups whose measured points it needs first


def shape_of(cfg) -> Shape:
    p = cfg.parallel
    nnodes = max(1, p.nnodes) if p.distributed_executor_backend != "ray" else 1
    world = p.tensor_parallel_size * p.pipeline_parallel_size
    return Shape(device=cfg.hardware.device, per_node=max(1, world // nnodes), nnodes=nnodes)


def group_members(steps: Iterable[Step]) -> dict[str, tuple[list[str], list[str]]]:
    """Each serve step's group among ``steps``: its step ids (the serve step, then the steps against
    its server, in the given order) and the groups it derives its schedule from. Needs no plan: the
    expanded runbook's steps tell it (what a group's job plans, ``only_group``)."""
    steps = list(steps)
    groups: dict[str, list[str]] = {}
    root: dict[str, str] = {}  # serve step id -> its group (an interleaved candidate: its baseline's)
    owner: dict[str, str] = {}  # bench step id -> its group
    for s in steps:
        if s.traits.serves:
            beside = beside_of(s)
            root[s.id] = root.get(beside, s.id) if beside else s.id
            groups.setdefault(root[s.id], []).append(s.id)
        elif s.server in root:
            groups[root[s.server]].append(s.id)
            owner[s.id] = root[s.server]
    after = {}
    for s in steps:
        derive = getattr(getattr(s.keys, "gate", None), "derive_from", None)  # a serve step whose schedule its points derive
        if s.id in groups and derive:
            after[s.id] = list(dict.fromkeys(owner[b] for b in derive if b in owner))
    return {name: (ids, after.get(name, [])) for name, ids in groups.items()}


def beside_of(step: Step) -> str | None:
    """The serve step a server stays up beside (an interleaved sweep's candidate), if any."""
    return getattr(step.keys, "beside", None) if step.traits.serves else None


def plan_groups(plan) -> list[Group]:
    """The plan's server groups, in the order a sequential run starts them. An interleaved sweep is
    one group: its baseline and, one at a time beside it, each candidate, on twice the devices."""
    planned = {p.id: p for p in plan.steps}
    out = []
    for name, (ids, after) in group_members(p.step for p in plan.steps).items():
        shape = shape_of(planned[name].composed.cfg)
        if any(beside_of(planned[i].step) for i in ids):
            shape = dataclasses.replace(shape, per_node=2 * shape.per_node)
        out.append(Group(name, ids, shape, after))
    return out


def local_steps(plan) -> list[str]:
    """Steps the submitting side runs before any group: fetch, offline, benches against a url."""
    grouped = {s for g in plan_groups(plan) for s in g.steps}
    return [p.id for p in plan.steps if p.id not in grouped and not p.step.traits.merges]


def merge_steps(plan) -> list[str]:
    """Steps that read the groups' results: compare and sweep reports (run when results merge)."""
    return [p.id for p in plan.steps if p.step.traits.merges]


def find(groups: list[Group], name: str) -> Group:
    for g in groups:
        if g.name == name:
            return g
    known = ", ".join(g.name for g in groups) or "none (the runbook has no serve step)"
    raise UserError(f"--only-group {name}: no such server group; the runbook's groups: {known}")


def parse_shard(text: str) -> tuple[int, int]:
    """``i/n`` (1 <= i <= n): the i-th of n shards."""
    m = SHARD.match(text.strip())
    if not m or not 1 <= int(m[1]) <= int(m[2]):
        raise UserError(f"--shard {text!r}: give i/n with 1 <= i <= n, e.g. --shard 1/4")
    return int(m[1]), int(m[2])


def shard(groups: list[Group], i: int, n: int) -> list[Group]:
    """Shard i of n: every n-th group starting at the i-th (1-based), so shards stay balanced."""
    return groups[i - 1::n]


def waves(groups: list[Group]) -> list[list[Group]]:
    """Groups in the order they may start: each wave needs only the groups of earlier waves."""
    done: set[str] = set()
    pending, out = list(groups), []
    while pending:
        ready = [g for g in pending if all(a in done or a not in {x.name for x in groups} for a in g.after)]
        if not ready:  # a cycle cannot be planned; keep the rest together
            ready = pending
        out.append(ready)
        done |= {g.name for g in ready}
        pending = [g for g in pending if g not in ready]
    return out


def group_dir(run_dir: Path, name: str) -> Path:
    return Path(run_dir) / GROUPS_DIR / name


def only_group(runbook: Runbook, name: str) -> Runbook | None:
    """The expanded runbook cut down to group ``name`` and the groups it derives from, as
    ``group_runbook`` cuts it, before anything is planned (a group's job plans only that); None when
    the runbook has no such group."""
    found = group_members(runbook.steps)
    if name not in found:
        return None
    keep = {name, *found[name][1]}
    return _cut(runbook, [s for g in keep for s in found[g][0]], {})


def group_runbook(runbook: Runbook, groups: list[Group], name: str, port: int | None,
                  ports: dict[str, int] | None = None) -> Runbook:
    """The expanded runbook cut down to group ``name`` (and the groups it derives from, whose points
    its run reads), needs kept within it. ``port``: the group's server port (a step override, so it
    reaches its benches); ``ports``: those the earlier groups used (their commands must match)."""
    group = find(groups, name)
    by_name = {g.name: g for g in groups}
    keep = [*group.steps, *(s for a in group.after for s in by_name[a].steps)]
    port_of = {g.name: (ports or {}).get(g.name) for g in groups if g.name in group.after}
    port_of[group.name] = port
    return _cut(runbook, keep, port_of)


def _cut(runbook: Runbook, keep: Iterable[str], port_of: dict[str, int | None]) -> Runbook:
    """Steps ``keep`` of the runbook, in its order, needs kept within them, a serve step of
    ``port_of`` on its port."""
    keep = set(keep)
    steps = []
    for s in runbook.steps:
        if s.id not in keep:
            continue
        change = {"needs": [n for n in s.needs if n in keep]}
        if s.traits.serves and port_of.get(s.id) is not None:  # a server beside it takes the next port (serve.plan)
            change["keys"] = dataclasses.replace(s.keys, overrides=[*s.keys.overrides, f"serve.port={port_of[s.id]}"])
        steps.append(dataclasses.replace(s, **change))
    return dataclasses.replace(runbook, steps=steps)


def rebase(planned, old: Path, new: Path) -> None:
    """Point a planned step's directory and files from run directory ``old`` to ``new``."""
    old, new = Path(old), Path(new)

    def moved(path: Path) -> Path:
        try:
            return new / Path(path).relative_to(old)
        except ValueError:
            return path

    planned.run_dir = new if Path(planned.run_dir) == old else planned.run_dir
    planned.artifacts = {k: moved(v) for k, v in planned.artifacts.items()}
    planned.inputs = {k: moved(v) for k, v in planned.inputs.items()}
