"""``llama4spec regress OLD_RUN NEW_RUN``: the points two run directories both measured, paired, and
what differs between the runs (versions, host, environment); the statistics are ``analysis.regress``.

Two points pair when they measured the same thing (``merge.identity``: the composed config and the
benchmark command, apart from where they ran): by step id first, then, for points left over, by
identity alone. Versions are not part of what a point measured, so an upgrade's runs pair. A point
of both runs whose identity differs is not comparable, with the keys that differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from llama4spec.errors import UserError
from llama4spec.figures import regressed
from llama4spec.files import plain
from llama4spec.records.host import HostRecord, environment_or_problem, host_or_problem
from llama4spec.runbook import merge
from llama4spec.runbook.write_page import traits
from llama4spec.runbook.rundir import Measured
from llama4spec.stats.components import pooled
from llama4spec.stats.noise import Noise
from llama4spec.analysis.regress import PointChange, Runs, compare_points

@dataclass
class Regress:
    old: Path
    new: Path
    points: list[PointChange]
    not_comparable: list[tuple[str, list[str]]] = field(default_factory=list)  # point id -> the keys that differ
    only_old: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    versions: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # name -> (old, new), those that differ
    host: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    environment: list[str] = field(default_factory=list)  # variables set differently
    lossless: list[LosslessChange] = field(default_factory=list)  # lossless steps of both runs
    noise: Noise | None = None  # the estimate the timed figures' between-start term came from


@dataclass
class LosslessChange:
    """A lossless step both runs recorded: its verdicts and what got worse (``lossless.record.worse``)."""

    id: str
    old: str
    new: str
    worse: list[str]


def lossless_changes(sources: list[merge.Source]) -> tuple[list[LosslessChange], bool]:
    """The lossless steps both runs recorded, paired by step id; (changes, whether either run has any).
    UserError (one line) when a pair checked different targets."""
    from llama4spec.lossless.record import load, worse
    from llama4spec.runbook.steps.lossless import records_in

    old, new = (records_in(s) for s in sources)
    out = []
    for sid in old:
        if sid in new:
            a, b = load(old[sid]), load(new[sid])
            out.append(LosslessChange(sid, a.verdict, b.verdict, worse(a, b)))
    return out, bool(old or new)


def measured_points(source: merge.Source) -> dict[str, Measured]:
    """Every bench step of a run with a counted record (its groups' included)."""
    ids = [sid for sid, name in source.kinds().items() if traits(name).benchmarks]
    return merge.collect([source], ids)


def _key(m: Measured) -> str:
    return json.dumps(merge.identity(m), sort_keys=True, default=str)


def pair(old: Mapping[str, Measured], new: Mapping[str, Measured]):
    """(pairs of points that measured the same thing, [(id, keys that differ)], ids only in old, only in new)."""
    pairs, not_comparable = [], []
    left_old = [pid for pid in old if pid not in new]
    left_new = [pid for pid in new if pid not in old]
    for pid in old:
        if pid in new:
            keys = merge.differing(old[pid], new[pid])
            if keys:
                not_comparable.append((pid, keys))
            else:
                pairs.append((old[pid], new[pid]))
    by_identity = {}
    for pid in left_new:
        by_identity.setdefault(_key(new[pid]), pid)
    only_old = []
    for pid in left_old:
        match = by_identity.pop(_key(old[pid]), None)
        if match is None:
            only_old.append(pid)
        else:
            pairs.append((old[pid], new[match]))
            left_new.remove(match)
    return pairs, not_comparable, only_old, left_new


def runs_of(m: Measured, key: str) -> Runs:
    """One metric's per-run values of a point, with each run's server start."""
    if key == "acceptance_length":
        counted = [r for r in m.record.counted_runs()
                   if r.acceptance is not None and r.acceptance.mean_acceptance_length is not None]
        return Runs(tuple(float(r.acceptance.mean_acceptance_length) for r in counted), tuple(r.start for r in counted))
    return Runs(tuple(m.record.samples(key)), tuple(m.record.sample_starts(key)))


def _host_record(source: merge.Source) -> HostRecord:
    """host.json of the run (or of its first group that has one), through its model; UserError (one
    line naming the file and the field) for one this tool did not write."""
    for where in source.runs:
        record, problem = host_or_problem(where / "host.json")
        if problem is not None:
            raise UserError(f"{problem}; give runs whose records are as `run` wrote them")
        if record is not None:
            return record
    return HostRecord()


def _differ(old: Any, new: Any) -> dict[str, tuple[Any, Any]]:
    old, new = (x if isinstance(x, dict) else {} for x in (old, new))
    return {str(k): (old.get(k), new.get(k)) for k in dict.fromkeys([*old, *new])
            if old.get(k) != new.get(k) and isinstance(old.get(k, ""), (str, int, float, type(None), list))}


def regress(old_dir: Path, new_dir: Path) -> Regress:
    """The points of two run directories paired and compared; UserError (one line) when either holds
    no counted benchmark record or no point of one measured what a point of the other did."""
    if Path(old_dir).resolve() == Path(new_dir).resolve():
        raise UserError(f"{plain(str(old_dir))} is given as both OLD_RUN and NEW_RUN; give two separate runs")
    sources = [merge.load(Path(d)) for d in (old_dir, new_dir)]
    lossless, any_lossless = lossless_changes(sources)
    measured = [measured_points(s) for s in sources]
    if any_lossless and not (measured[0] and measured[1]):  # a losslessness check: its records alone
        if not lossless:
            raise UserError(f"no lossless step of {plain(str(old_dir))} was recorded in {plain(str(new_dir))} too; "
                            f"give two runs of the same checks")
        return Regress(Path(old_dir), Path(new_dir), [], lossless=lossless, **_provenance(sources))
    for s, points in zip(sources, measured):
        if not points:
            raise UserError(f"{plain(str(s.dir))}: no counted benchmark record in this run directory; give a run "
                            f"whose benchmarks finished (or --resume it first)")
    pairs, not_comparable, only_old, only_new = pair(*measured)
    if not pairs:
        why = (f" ({not_comparable[0][0]} differs in {', '.join(not_comparable[0][1][:4])})" if not_comparable else
               f" (no point id or setting in common: {len(only_old)} and {len(only_new)} points)")
        raise UserError(f"nothing comparable: no point of {plain(str(old_dir))} measured what a point of "
                        f"{plain(str(new_dir))} measured{why}; give two runs of the same runbook and settings")
    table = {(a.id, b.id): {m.key: (runs_of(a, m.key), runs_of(b, m.key)) for m in regressed()} for a, b in pairs}
    noise = run_noise(measured)
    return Regress(Path(old_dir), Path(new_dir), compare_points(table, noise=noise), not_comparable, only_old,
                   only_new, lossless=lossless, noise=noise, **_provenance(sources))


def run_noise(measured: list[dict[str, Measured]]) -> Noise:
    """The noise of the comparisons of two runs: each run's points' own server starts (never one
    run's against the other's: a change between them would count as noise), pooled with the
    hardware prior of their configs."""
    from llama4spec.runbook.noise_prior import of_sweep

    prior = of_sweep(None, [m.config for points in measured for m in points.values()])
    runs = {f"{i}:{pid}": runs_of(m, "output_throughput") for i, points in enumerate(measured)
            for pid, m in points.items()}
    return pooled(prior, {key: r.values for key, r in runs.items()}, {key: r.starts for key, r in runs.items()})


def _provenance(sources: list[merge.Source]) -> dict[str, Any]:
    """What differs between two runs' hosts: versions, host, environment variables."""
    hosts = [_host_record(s) for s in sources]
    envs = []
    for s in sources:
        env, problem = environment_or_problem(s.dir / "environment.json")
        if problem is not None:
            raise UserError(f"{problem}; give runs whose records are as `run` wrote them")
        envs.append(dict(env.root) if env is not None else {})
    return {"versions": _differ(hosts[0].versions, hosts[1].versions),
            "host": _differ(*(h.host.model_dump(exclude_defaults=True) for h in hosts)),
            "environment": list(_differ(*envs))}


def heading(r: Regress) -> list[str]:
    """What differs between the two runs, in lines (versions first)."""
    show = lambda v: plain(str(v), 120) if v is not None else "none"  # noqa: E731
    if r.versions:
        lines = ["versions that differ: " + "; ".join(f"{plain(k, 60)} {show(a)} -> {show(b)}"
                                                      for k, (a, b) in r.versions.items())]
    else:
        lines = ["no version differs between the two runs (host.json)"]
    if r.host:
        lines.append("host: " + "; ".join(f"{plain(k, 60)} {show(a)} -> {show(b)}" for k, (a, b) in r.host.items()))
    if r.environment:
        lines.append("environment variables set differently: " + ", ".join(plain(k, 60) for k in r.environment[:20])
                     + (", ..." if len(r.environment) > 20 else ""))
    return lines


def lossless_lines(r: Regress) -> list[str]:
    """Each lossless step's verdicts, and what got worse."""
    return [f"lossless {c.id}: {c.old} -> {c.new}" + ("" if c.worse else ", nothing got worse") for c in r.lossless]


def lossless_worse(r: Regress) -> list[str]:
    """What got worse in each lossless step, one line each (a gate fails on any)."""
    return [f"lossless {c.id}: {line}" for c in r.lossless for line in c.worse]


def notes(r: Regress) -> list[str]:
    """The points left out, with why."""
    out = [f"not comparable: {pid} ({', '.join(keys[:6])}{', ...' if len(keys) > 6 else ''} differ)"
           for pid, keys in r.not_comparable]
    if r.only_old:
        out.append(f"only in {plain(str(r.old))}: {', '.join(r.only_old)}")
    if r.only_new:
        out.append(f"only in {plain(str(r.new))}: {', '.join(r.only_new)}")
    return out
