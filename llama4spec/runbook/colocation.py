"""What else ran on a group's node while it measured, from the groups' own ``job.json`` (node,
started, finished: the launcher's bookkeeping), and the points a sweep compares that were measured
under different co-location. Pure apart from reading those records.

Two groups are co-located when they ran on the same node and their spans [started, finished]
overlap. On a shared machine (``--parallel``, or several Slurm jobs on one node) a server measured
beside another sees a different machine than one measured alone: its points are not comparable
with theirs without a word.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Iterable, Mapping

from llama4spec.runbook.groups import GROUPS_DIR

STAMP = "%Y-%m-%dT%H:%M:%S%z"
MAX_JOB_BYTES = 64 * 1024


@dataclass(frozen=True)
class Span:
    group: str
    node: str
    start: float  # seconds since the epoch
    end: float


def span(group: str, job: Mapping) -> Span | None:
    """A group's span from its job.json (None when it lacks a node or either time)."""
    node, started, finished = job.get("node"), job.get("started"), job.get("finished")
    if not (isinstance(node, str) and node and isinstance(started, str) and isinstance(finished, str)):
        return None
    try:
        a, b = (datetime.strptime(t, STAMP).timestamp() for t in (started, finished))
    except ValueError:
        return None
    return Span(group, node, a, b) if a <= b else None


def colocated(spans: Iterable[Span]) -> dict[str, tuple[str, ...]]:
    """Each group -> the other groups on its node whose spans overlap its own (sorted)."""
    spans = list(spans)
    return {s.group: tuple(sorted(o.group for o in spans if o.group != s.group and o.node == s.node
                                  and o.start < s.end and s.start < o.end)) for s in spans}


def read_spans(run_dir: Path) -> list[Span]:
    """The spans of every group under ``run_dir/groups/`` with a readable job.json."""
    from llama4spec.errors import UserError
    from llama4spec.files import Expect, json_or_none
    from llama4spec.records.job import checked

    job = Expect("job record", "it is not a record this tool wrote", MAX_JOB_BYTES)
    out = []
    root = Path(run_dir) / GROUPS_DIR
    for path in sorted(root.glob("*/job.json")) if root.is_dir() else []:
        data, _ = json_or_none(path, job)
        try:
            record = checked(data, str(path)) if data is not None else None
        except UserError:
            continue  # not one this tool wrote: no span (what ran beside it is unknown)
        if record is not None and (s := span(path.parent.name, record.model_dump())) is not None:
            out.append(s)
    return out


def group_of(directory: Path) -> str | None:
    """The group a point's directory belongs to (``.../groups/<group>/<point>``), or None."""
    parts = Path(directory).parts
    return parts[-2] if len(parts) >= 3 and parts[-3] == GROUPS_DIR else None


def beside_points(run_dir: Path, where: Mapping[str, Path]) -> dict[str, tuple[str, ...]]:
    """Point id -> the groups that ran beside its own on its node while it measured, for the points
    measured in groups of ``run_dir`` (``where``: point id -> its directory); others are left out."""
    beside = colocated(read_spans(run_dir))
    root = (Path(run_dir) / GROUPS_DIR).resolve()
    out = {}
    for pid, directory in where.items():
        group = group_of(directory)
        if group is not None and Path(directory).resolve().parent.parent == root and group in beside:
            out[pid] = beside[group]
    return out


def mixed(points: Mapping[int, Mapping[str, tuple[str, ...]]]) -> list[str]:
    """Warnings, one per concurrency whose points (point id -> the groups beside it) were measured
    under different co-location (a different number of groups beside them): each point named."""
    out = []
    for concurrency, members in sorted(points.items()):
        if len({len(v) for v in members.values()}) <= 1:
            continue
        named = "; ".join(f"{pid} beside {', '.join(v)}" if v else f"{pid} alone" for pid, v in members.items())
        out.append(f"concurrency {concurrency}: points measured under different co-location are compared here "
                   f"({named}); a server measured beside another saw a differently loaded machine")
    return out
