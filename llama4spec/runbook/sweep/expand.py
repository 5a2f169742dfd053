"""A sweep step expanded into the steps it stands for: per server a serve step, a bench step per
client-side setting, with ``repeats: auto`` a settle step, then a stop step; with ``revisit: true``
a second start of every server; with ``verify_schedule: true`` a server running the lookahead
schedule derived from the points; with ``design: interleaved`` no speculation's server beside each
candidate. The matrix itself (checking it, grouping its combinations by server): ``runbook.matrix``.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Callable, Mapping

from llama4spec.config.compose import compose_config
from llama4spec.errors import UserError
from llama4spec.runbook.fields import AUTO
from llama4spec.runbook.matrix import Make, ServerGroup, bounded_id, file_label, is_client_axis, server_groups
from llama4spec.runbook.spec import Runbook, Step
from llama4spec.runbook.sweep.gates import Dominance, Revisit, Schedule

SEQUENTIAL, INTERLEAVED = DESIGNS = ("sequential", "interleaved")  # a sweep's design (its first is the default)


def pin_async_scheduling(groups: list[ServerGroup]) -> str | None:
    """Where one of a sweep's servers runs a method vLLM 0.32 schedules without async scheduling
    (``config.methods``), every server gets ``serve.async_scheduling=false``, so that a speedup
    compares methods and not schedulers: the sentence that says so, None where nothing was pinned
    (every method keeps it on, or a server sets it itself)."""
    from llama4spec.config import methods

    cfgs = [g.cfg for g in groups if g.cfg is not None]
    names = [c.draft.method for c in cfgs]
    if len(cfgs) < 2 or methods.pinned_async_scheduling(names) is not False \
            or any(c.serve.async_scheduling is not None for c in cfgs):
        return None
    for g in groups:
        g.overrides.append("serve.async_scheduling=false")
    off = sorted({methods.label(n) for n in names if not methods.async_scheduling(n)})
    return (f"async scheduling pinned off on every server: vLLM 0.32 turns it off for {', '.join(off)}, so "
            f"each speedup compares methods under one scheduler (serve.async_scheduling=true|false sets it yourself)")


def expand_step(runbook: Runbook, step: Step, cli: list[str], taken: set[str], make: Make,
                problems: list[str], environ: Mapping[str, str] | None = None) -> list[Step]:
    """The serve/bench/stop steps a sweep step stands for, followed by the sweep step itself
    (which then needs every bench and lists them as its points). ``taken`` holds the step ids in use
    (the file's and those generated so far); the generated ids are added to it. Linear in the points.
    ``environ``: where an interleaved sweep reads the devices it may split (this process's).

    ``design: interleaved``: no speculation's server first, then each candidate's beside it on the
    other half of the devices, its points alternating runs with no speculation's; no speculation's
    own points last (they only collect what the pairs measured), then its stop. Where two copies do
    not fit, the sequential design, with the reason kept as the step's ``fallback``."""
    at = f"{runbook.path}: step '{step.id}'"
    keys = step.keys
    matrix = keys.matrix or {}
    server_axes = [a for a in matrix if not is_client_axis(a)]
    client_axes = [a for a in matrix if is_client_axis(a)]
    client_combos = list(itertools.product(*(matrix[a] for a in client_axes)))
    client_labels = ["-".join(file_label(a, v) for a, v in zip(client_axes, combo)) for combo in client_combos]
    out: list[Step] = []
    points: list[str] = []
    previous_stop: str | None = None
    names: set[str] = set()
    clash: str | None = None

    def new_id(text: str) -> str:
        nonlocal clash
        sid = bounded_id(text)
        if sid in taken and clash is None:
            clash = sid
        taken.add(sid)
        return sid

    def server_id(n: int, group: ServerGroup) -> tuple[str, str]:
        """A server's step id and what it serves, from the axes constant over its combinations."""
        constant = group.constant(server_axes)
        name = "-".join(file_label(a, v) for a, v in constant) or "server"
        if name in names:
            base, k = name, n
            while name in names:
                name, k = f"{base}-{k}", k + 1
        names.add(name)
        return new_id(f"{step.id}-{name}"), " ".join(f"{a}={v}" for a, v in constant) or "the sweep's server"

    def measured_by(sid: str) -> list[Step]:
        """A server's points (one per client combination, added to ``points``), then their settle step."""
        earlier = list(points)
        steps = []
        for combo, label in zip(client_combos, client_labels):
            bid = new_id(f"{sid}-{label}" if client_axes else f"{sid}-bench")
            steps.append(_point(make, keys, bid, sid, client_axes, combo))
            points.append(bid)
        return steps + _settle(make, keys, new_id, sid, points[len(earlier):], earlier)

    groups = server_groups(runbook, step, matrix, cli, problems)
    pinned = pin_async_scheduling(groups)
    if pinned:
        step = dataclasses.replace(step, keys=dataclasses.replace(keys, async_pinned=pinned))
        keys = step.keys
    if keys.design == INTERLEAVED and keys.repeats == AUTO:
        problems.append(f"{at}: design: interleaved measures a fixed number of back-to-back pairs, and repeats is "
                        f"auto (in the runbook or by --repeats auto); give repeats: N or --repeats N (e.g. 5), "
                        f"or measure until decided with design: sequential")
    elif keys.design == INTERLEAVED and groups:
        found = _interleaving(groups, environ)
        if isinstance(found, str):
            problems.append(f"{at}: design: interleaved: {found}")
        elif found.why is not None:  # two copies do not fit: sequential, and the dry run and report say so
            step = dataclasses.replace(step, keys=dataclasses.replace(keys, fallback=found.why))
            keys = step.keys
        else:
            out, points = _interleaved(make, keys, step, groups, found.baseline, server_id, new_id, client_axes,
                                       client_combos, client_labels)
            groups, previous_stop = [], out[-1].id  # a later phase (verify_schedule) starts after them
    first_pass: list[tuple[str, list[str], list[str]]] = []  # (server id, its overrides, its points)
    for n, group in enumerate(groups, 1):
        sid, what = server_id(n, group)
        serve = make("serve", sid, needs=[previous_stop] if previous_stop else list(step.needs),
                     description=f"sweep '{step.id}': server for {what}",
                     overrides=[*keys.overrides, *group.overrides],
                     gate=Dominance(list(points), keys.rule) if keys.skip_dominated else None)
        out.append(serve)
        first = len(points)
        out += measured_by(sid)
        previous_stop = new_id(f"{sid}-stop")
        out.append(make("stop", previous_stop, server=sid))
        first_pass.append((sid, [*keys.overrides, *group.overrides], points[first:]))
    if keys.repeats == AUTO and keys.revisit:  # a second start of each server the first pass left undecided
        measured = list(points)
        for sid, overrides, mine in first_pass:
            rid = new_id(f"{sid}-revisit")
            out.append(make("serve", rid, needs=[previous_stop] if previous_stop else list(step.needs),
                            description=f"sweep '{step.id}': server {sid} started again (revisit), "
                                        f"only if its points are still undecided after the first pass",
                            overrides=overrides, gate=Revisit(list(mine), measured, keys.rule)))
            out.append(make("settle", new_id(f"{rid}-settle"), server=rid, points=list(mine),
                            earlier=[q for q in measured if q not in mine], rule=keys.rule, start=2,
                            warmup=keys.warmup))
            previous_stop = new_id(f"{rid}-stop")
            out.append(make("stop", previous_stop, server=rid))
    if keys.verify_schedule:  # a second phase: the schedule derived from the points above, measured the same way
        found = _schedule_server(runbook, step, matrix, cli)
        if isinstance(found, str):
            problems.append(f"{at}: verify_schedule: {found}")
        else:
            sid = new_id(f"{step.id}-schedule")
            out.append(make("serve", sid, needs=[previous_stop] if previous_stop else list(step.needs),
                               description=f"sweep '{step.id}': the lookahead schedule derived from its points",
                               overrides=[*keys.overrides, *found], gate=Schedule(list(points))))
            out += measured_by(sid)
            out.append(make("stop", new_id(f"{sid}-stop"), server=sid))
    if clash is not None:
        problems.append(f"{at}: the generated step id '{clash}' is already used by another step (or made "
                        f"twice, by values that differ only in punctuation); rename the sweep step or that step")
    return [*out, dataclasses.replace(step, needs=list(dict.fromkeys([*step.needs, *points])),
                                      keys=dataclasses.replace(keys, points=points))]


@dataclasses.dataclass(frozen=True)
class Interleaving:
    """Which server is the baseline and how the devices split (``why``: they do not)."""

    baseline: int  # index among the sweep's servers
    why: str | None


def _interleaving(groups: list[ServerGroup], environ: Mapping[str, str] | None) -> Interleaving | str:
    """The baseline of an interleaved sweep and whether two of its servers fit side by side; a
    string when the sweep cannot be interleaved at all."""
    import os

    from llama4spec.engine.devices import split

    base = [i for i, g in enumerate(groups) if g.cfg is not None and not g.cfg.draft.method]
    if len(base) != 1 or len(groups) < 2:
        return ("it pairs each candidate with the one server without speculation; the matrix gives "
                f"{len(base)} such server{'s' if len(base) != 1 else ''} and {len(groups) - len(base)} "
                f"candidate{'s' if len(groups) - len(base) != 1 else ''}: sweep draft over none and a draft, "
                f"e.g. draft: [none, tiny_eagle]")
    widest = max(groups, key=lambda g: g.cfg.parallel.tensor_parallel_size * g.cfg.parallel.pipeline_parallel_size)
    cfg = widest.cfg
    if max(1, cfg.parallel.nnodes) > 1:
        return Interleaving(base[0], "its servers span nodes; two multi-node servers are not kept side by side")
    per_node = cfg.parallel.tensor_parallel_size * cfg.parallel.pipeline_parallel_size
    found = split(cfg.hardware.device, per_node, cfg.hardware.devices_per_node,
                  os.environ if environ is None else environ)
    return Interleaving(base[0], found.why)


def _interleaved(make: Make, keys: Any, step: Step, groups: list[ServerGroup], found: int, server_id, new_id,
                 client_axes: list[str], client_combos: list[tuple[str, ...]],
                 client_labels: list[str]) -> tuple[list[Step], list[str]]:
    """An interleaved sweep's steps and its points (no speculation's first); ``found``: the index of
    no speculation's server among ``groups``."""
    base = groups[found]
    base_slot, cand_slot = (1, 0) if keys.swap_devices else (0, 1)
    bsid, _ = server_id(found + 1, base)
    out = [make("serve", bsid, needs=list(step.needs), overrides=[*keys.overrides, *base.overrides], slot=base_slot,
                description=f"sweep '{step.id}': no speculation, up beside each candidate in turn (interleaved)")]
    base_points = [new_id(f"{bsid}-{label}" if client_axes else f"{bsid}-bench") for label in client_labels]
    previous, candidates = bsid, []
    for n, group in enumerate(groups, 1):
        if group is base:
            continue
        sid, what = server_id(n, group)
        out.append(make("serve", sid, needs=[previous], slot=cand_slot, beside=bsid,
                        overrides=[*keys.overrides, *group.overrides],
                        gate=Dominance(list(candidates), keys.rule) if keys.skip_dominated else None,
                        description=f"sweep '{step.id}': server for {what}, beside {bsid} (interleaved)"))
        for combo, label, paired in zip(client_combos, client_labels, base_points):
            bid = new_id(f"{sid}-{label}" if client_axes else f"{sid}-bench")
            point = _point(make, keys, bid, sid, client_axes, combo)
            out.append(dataclasses.replace(point, keys=dataclasses.replace(point.keys, pair_with=paired,
                                                                           gap_s=keys.gap_s)))
            candidates.append(bid)
        previous = new_id(f"{sid}-stop")
        out.append(make("stop", previous, server=sid))
    for bid, combo in zip(base_points, client_combos):  # its runs come from the pairs above
        point = _point(make, keys, bid, bsid, client_axes, combo)
        out.append(dataclasses.replace(point, keys=dataclasses.replace(point.keys, paired=True)))
    out.append(make("stop", new_id(f"{bsid}-stop"), server=bsid))
    return out, [*base_points, *candidates]


def _point(make: Make, keys: Any, bid: str, server: str, client_axes: list[str], combo: tuple[str, ...]) -> Step:
    """A bench step of a sweep: one client-side combination against one of its servers."""
    auto = keys.repeats == AUTO  # measured until decided: min_repeats here, the rest by the server's settle step
    return make("bench", bid, server=server, label=bid, extra_args=list(keys.extra_args),
                overrides=[f"{a}={v}" for a, v in zip(client_axes, combo)],
                repeats=keys.rule.min_repeats if auto else keys.repeats, warmup=keys.warmup)


def _settle(make: Make, keys: Any, new_id: Callable[[str], str], server: str, mine: list[str],
            earlier: list[str]) -> list[Step]:
    """With repeats: auto, the step that gives a server's points further runs, one at a time, until
    their comparisons with the points measured before them are decided (none otherwise)."""
    if keys.repeats != AUTO or not mine:
        return []
    return [make("settle", new_id(f"{server}-settle"), server=server, points=list(mine), earlier=list(earlier),
                 rule=keys.rule)]


def _schedule_server(runbook: Runbook, step: Step, matrix: dict[str, list[str]], cli: list[str]) -> list[str] | str:
    """The overrides of the schedule-verifying server (its draft, and lookahead = the largest swept),
    or why there can be none."""
    try:
        cfg = compose_config([*runbook.overrides, *step.keys.overrides, *cli]).cfg
    except UserError:
        return "the sweep's own overrides do not compose (reported above)"
    drafts = [d for d in matrix.get("draft", [cfg.draft.name if cfg.draft.method else "none"])
              if d not in ("none", "null")]
    if len(drafts) != 1:
        return (f"needs exactly one draft in the sweep besides none (found {', '.join(drafts) or 'none'}); "
                f"a schedule is derived per draft")
    try:
        lookahead = max(int(v) for v in matrix.get("lookahead", [str(cfg.lookahead)]))
    except ValueError:
        return "the lookahead values are not whole numbers"
    return [f"draft={drafts[0]}", f"lookahead={lookahead}"]
