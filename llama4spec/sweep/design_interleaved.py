"""The back-to-back design (``design: interleaved``): no speculation's server first, then each
candidate's beside it on the other half of the devices, its points alternating runs with no
speculation's; no speculation's own points last (they only collect what the pairs measured), then
its stop. With ``starts: J`` (or ``repeats: auto``) back-to-back blocks instead (``blocks``): both
servers started together for every block of every candidate, crossed over block by block. Where
two copies do not fit, the sequential design, with the reason kept as the sweep's ``fallback``; where
the sweep cannot be interleaved at all, one problem. ``design: auto`` asks ``chosen_design``
whether to take blocks."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping

from llama4spec.runbook.fields import AUTO
from llama4spec.runbook.matrix import ServerGroup
from llama4spec.sweep.design import Design, Scope
from llama4spec.runbook.block_order import rounds, side_by_side_problem
from llama4spec.sweep.expansion import Expansion
from llama4spec.sweep.gates import Dominance, MoreBlocks
from llama4spec.sweep.planned import INTERLEAVED
from llama4spec.sweep.rule import BLOCK_RUNS


@dataclass(frozen=True)
class Interleaved(Design):
    """``design: interleaved`` (or the one ``design: auto`` chose): pairs, or back-to-back blocks
    (``blocks``: with ``starts: J`` or ``repeats: auto``); its stop reason: why two copies do not
    fit (its servers then left to the sequential design)."""

    name = INTERLEAVED
    phase = 10
    choice = True
    own_keys = ("gap_s", "swap_devices")
    blocks: bool

    @classmethod
    def of(cls, x: Expansion) -> Interleaved | None:
        if (x.plan.chosen or x.keys.design) != INTERLEAVED:
            return None
        return cls(x.keys.starts > 1 or x.keys.repeats == AUTO)

    def expand(self, x: Expansion, groups: list[ServerGroup], scope: Scope) -> list[ServerGroup]:
        left = interleave(x, groups, scope.environ, scope.problems, scope.at, self.blocks)
        self.state.stop = x.plan.fallback
        return left


@dataclasses.dataclass(frozen=True)
class Interleaving:
    """Which server is the baseline and how the devices split (``why``: they do not)."""

    baseline: int  # index among the sweep's servers
    why: str | None


def interleave(x: Expansion, groups: list[ServerGroup], environ: Mapping[str, str] | None,
               problems: list[str], at: str, as_blocks: bool) -> list[ServerGroup]:
    """An interleaved sweep's pairs, appended to ``x``; returns the servers left to the sequential
    design (all of them where two copies do not fit or the sweep is refused, none otherwise).
    ``environ``: where it reads the devices it may split (this process's)."""
    if not groups:
        return groups
    found = interleaving(groups, environ)
    if isinstance(found, str):
        problems.append(f"{at}: design: interleaved: {found}")
        return groups
    if found.why is not None:  # two copies do not fit: sequential, and the dry run and report say so
        x.plan.fallback = found.why
        return groups
    if as_blocks:  # back-to-back blocks: both servers started for every block
        blocks(x, groups, found.baseline)
    else:
        interleaved(x, groups, found.baseline)
    return []  # a later phase (verify_schedule) starts after them


CPU_HALVES = ("two servers would each get half the cores, which is another server than the one asked about")


def chosen_design(x: Expansion, groups: list[ServerGroup], environ: Mapping[str, str] | None) -> str | None:
    """``design: auto``: None where back-to-back blocks fit (one server without speculation, a
    candidate or more, on GPUs, two copies on the node); else why the sweep is sequential."""
    if x.keys.revisit:
        return "revisit: true starts undecided servers again, which is the sequential design's"
    found = interleaving(groups, environ) if groups else "the sweep has no server"
    if isinstance(found, str):
        return "back-to-back blocks need one server without speculation and a candidate or more"
    cfgs = [g.cfg for g in groups if g.cfg is not None]
    if any(c.hardware.device != "cuda" for c in cfgs):
        return CPU_HALVES
    return found.why


def interleaving(groups: list[ServerGroup], environ: Mapping[str, str] | None) -> Interleaving | str:
    """The baseline of an interleaved sweep and whether two of its servers fit side by side; a
    string when the sweep cannot be interleaved at all."""
    base = [i for i, g in enumerate(groups) if g.cfg is not None and not g.cfg.draft.method]
    if len(base) == len(groups) == 2:  # two settings without speculation (an A/A, a server knob): the first the reference
        base = base[:1]
    if len(base) != 1 or len(groups) < 2:
        return ("it pairs each candidate with the one server without speculation; the matrix gives "
                f"{len(base)} such server{'s' if len(base) != 1 else ''} and {len(groups) - len(base)} "
                f"candidate{'s' if len(groups) - len(base) != 1 else ''}: sweep draft over none and a draft, "
                f"e.g. draft: [none, tiny_eagle], or give exactly two settings without speculation (an A/A of a "
                f"server knob: the first is the reference)")
    widest = max(groups, key=lambda g: g.cfg.parallel.tensor_parallel_size * g.cfg.parallel.pipeline_parallel_size)
    return Interleaving(base[0], side_by_side_problem(widest.cfg, environ))


def interleaved(x: Expansion, groups: list[ServerGroup], found: int) -> None:
    """An interleaved sweep's steps, appended to ``x``, and its points (no speculation's first);
    ``found``: the index of no speculation's server among ``groups``."""
    keys, step = x.keys, x.step
    base = groups[found]
    base_slot, cand_slot = (1, 0) if keys.swap_devices else (0, 1)
    bsid, _ = x.server_id(found + 1, base)
    x.out.append(x.make("serve", bsid, needs=x.needs(), overrides=[*keys.overrides, *base.overrides], slot=base_slot,
                        description=f"sweep '{step.id}': no speculation, up beside each candidate in turn (interleaved)"))
    base_points = [x.bench_id(bsid, label) for label in x.client_labels]
    previous, candidates = bsid, []
    for n, group in enumerate(groups, 1):
        if group is base:
            continue
        sid, what = x.server_id(n, group)
        x.out.append(x.make("serve", sid, needs=[previous], slot=cand_slot, beside=bsid,
                            overrides=[*keys.overrides, *group.overrides],
                            gate=Dominance(list(candidates), keys.rule) if keys.skip_dominated else None,
                            description=f"sweep '{step.id}': server for {what}, beside {bsid} (interleaved)"))
        for combo, label, paired in zip(x.client_combos, x.client_labels, base_points):
            point = x.point(x.bench_id(sid, label), sid, combo)
            x.out.append(dataclasses.replace(point, keys=dataclasses.replace(point.keys, pair_with=paired,
                                                                             gap_s=keys.gap_s)))
            candidates.append(point.id)
        x.stop(sid)
        previous = x.previous_stop
    for bid, combo in zip(base_points, x.client_combos):  # its runs come from the pairs above
        point = x.point(bid, bsid, combo)
        x.out.append(dataclasses.replace(point, keys=dataclasses.replace(point.keys, paired=True)))
    x.stop(bsid)
    x.points = [*base_points, *candidates]


def blocks(x: Expansion, groups: list[ServerGroup], found: int) -> None:
    """Back-to-back blocks (``design: interleaved`` with ``starts: J``, or with ``repeats: auto``),
    appended to ``x``: for each candidate J blocks, each no speculation's server and the
    candidate's started together on the two halves of the devices, ``repeats`` pairs of runs
    alternating, then both stopped. Block j + 1 swaps the halves (a crossover; ``swap_devices``
    sets block 1's); each round of blocks visits the candidates in a random order from
    ``order_seed``. Block 1 of a candidate measures its points; block j > 1 adds its runs to them,
    tagged as server start j (bench key ``adds_to``), and no speculation's runs of every block join
    its points, each tagged with the candidate's point and the block (``start``). The sweep's
    ``start_order`` (its ``SweepPlan``'s) names the candidates' serve steps in the order their blocks run.

    With ``repeats: auto``: ``max_repeats`` blocks of ``BLOCK_RUNS`` pairs, those after the first
    ``min_repeats`` each started only while the candidate's comparison against no speculation is
    open at some client setting (the ``MoreBlocks`` gate on its no speculation server)."""
    keys, step = x.keys, x.step
    auto = keys.repeats == AUTO
    total, runs = (keys.rule.max_repeats, BLOCK_RUNS) if auto else (keys.starts, keys.repeats)
    base = groups[found]
    bsid, _ = x.server_id(found + 1, base)
    base_overrides = [*keys.overrides, *base.overrides]
    cands = [(n, g) for n, g in enumerate(groups, 1) if g is not base]
    named = [(*x.server_id(n, g), [*keys.overrides, *g.overrides]) for n, g in cands]
    base_points = [x.bench_id(bsid, label) for label in x.client_labels]  # the first block's collecting steps
    first_of = [[x.bench_id(csid, label) for label in x.client_labels] for csid, _, _ in named]  # block 1's points
    points = [*base_points, *(pid for mine in first_of for pid in mine)]
    order = []
    for j, this_round in enumerate(rounds(len(cands), total, keys.order_seed), 1):
        swapped = keys.swap_devices != (j % 2 == 0)
        base_slot, cand_slot = (1, 0) if swapped else (0, 1)
        for i in this_round:
            csid, what, overrides = named[i]
            own = csid.removeprefix(f"{step.id}-")
            rid = csid if j == 1 else x.new_id(f"{csid}-block{j}")
            brid = x.new_id(f"{bsid}-{own}-block{j}")
            gate = MoreBlocks(step.id, first_of[i], points, j, keys.rule) if auto and j > keys.rule.min_repeats else None
            x.out.append(x.make("serve", brid, needs=x.needs(), slot=base_slot, overrides=list(base_overrides), gate=gate,
                                description=f"sweep '{step.id}': no speculation, block {j} of "
                                            f"{f'at most {total}' if auto else total} beside {what} (back-to-back blocks)"))
            x.out.append(x.make("serve", rid, needs=[brid], slot=cand_slot, beside=brid, overrides=list(overrides),
                                description=f"sweep '{step.id}': server for {what}, block {j}, beside {brid} "
                                            f"(back-to-back blocks)"))
            first = not order  # the sweep's first block: its collecting steps are no speculation's points
            collectors = base_points if first else [x.bench_id(brid, label) for label in x.client_labels]
            _block_benches(x, (rid, brid), j, first_of[i], collectors, base_points if not first else None, runs)
            x.stop(rid)
            x.stop(brid)
            order.append(rid)
    x.points = points
    x.plan.start_order, x.plan.block_runs = order, runs


def _block_benches(x: Expansion, servers: tuple[str, str], j: int, points: list[str], collectors: list[str],
                   adds_to: list[str] | None, runs: int) -> None:
    """Block ``j``'s bench steps, appended to ``x``: the candidate's (``servers``: its serve step and
    no speculation's) at every client setting, measuring its ``points`` in block 1 and adding runs
    to them after, each paired with no speculation's ``collectors``; then no speculation's own,
    adding to ``adds_to`` (its points) after the sweep's first block."""
    rid, brid = servers
    for c, combo in enumerate(x.client_combos):
        pid = points[c]
        point = x.point(pid if j == 1 else x.bench_id(rid, x.client_labels[c]), rid, combo)
        more = dict(pair_with=collectors[c], gap_s=x.keys.gap_s, block=True, repeats=runs, start=j)
        if j == 1:
            x.out.append(dataclasses.replace(point, keys=dataclasses.replace(point.keys, **more)))
        else:
            more.update(label=pid, adds_to=pid)
            x.out.append(dataclasses.replace(point, needs=[pid], keys=dataclasses.replace(point.keys, **more)))
    for c, combo in enumerate(x.client_combos):  # no speculation's runs of the block: its points' records
        point = x.point(collectors[c], brid, combo)
        more = dict(paired=True, start=j, block=True, repeats=runs)
        if adds_to is not None:
            more.update(label=adds_to[c], adds_to=adds_to[c])
        x.out.append(dataclasses.replace(point, keys=dataclasses.replace(point.keys, **more)))
