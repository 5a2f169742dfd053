"""Repeated starts (``starts: N`` in the sequential design): each setting's server started N times,
in N rounds, each round every setting once in a random order drawn from ``order_seed`` (randomized
multiple interleaved trials), so drift over the sweep does not line up with a setting and the
sweep's own runs estimate the between-start noise. A setting's first start measures its points as
the sequential design does; each later start adds ``repeats`` runs to those same points, tagged
with their start number (bench key ``adds_to``), which is what the pooled estimate
(``stats.components.pooled``) reads, as it reads a revisit's. The order is recorded on the sweep step
(its ``SweepPlan``'s ``start_order``: plan.json, the dry run), so a dry run is reproducible."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from llama4spec.runbook.block_order import rounds
from llama4spec.runbook.matrix import ServerGroup
from llama4spec.sweep.design import Design, Scope
from llama4spec.sweep.expansion import Expansion


@dataclass(frozen=True)
class RepeatedStarts(Design):
    """``starts: N`` (N > 1): every server the designs before it left started N times, in rounds."""

    name = "starts"
    phase = 20
    starts: int
    order_seed: int

    @classmethod
    def of(cls, x: Expansion) -> RepeatedStarts | None:
        return cls(x.keys.starts, x.keys.order_seed) if x.keys.starts > 1 else None

    def expand(self, x: Expansion, groups: list[ServerGroup], scope: Scope) -> list[ServerGroup]:
        if groups:  # each setting's server started again in rounds of a random order
            repeated_starts(x, groups)
        return []


def repeated_starts(x: Expansion, groups: list[ServerGroup]) -> None:
    """Every start of every server of ``groups``, appended to ``x`` in the rounds' order; the
    sweep's points stay in the servers' order, its ``start_order`` names the serve steps as they run."""
    keys, step = x.keys, x.step
    servers = [(*x.server_id(n, group), [*keys.overrides, *group.overrides]) for n, group in enumerate(groups, 1)]
    before, points_of, order = list(x.points), {}, []
    for k, this_round in enumerate(rounds(len(servers), keys.starts, keys.order_seed), 1):
        for i in this_round:
            sid, what, overrides = servers[i]
            rid = sid if k == 1 else x.new_id(f"{sid}-start{k}")
            x.out.append(x.make("serve", rid, needs=x.needs(), overrides=list(overrides),
                                description=f"sweep '{step.id}': server for {what}, start {k} of {keys.starts}"))
            if k == 1:
                first = len(x.points)
                x.out += x.measured_by(rid)
                points_of[sid] = x.points[first:]
            else:
                for pid, combo, label in zip(points_of[sid], x.client_combos, x.client_labels):
                    point = x.point(x.bench_id(rid, label), rid, combo)
                    x.out.append(dataclasses.replace(point, needs=[pid],  # skipped where its first start failed
                                                     keys=dataclasses.replace(point.keys, label=pid, adds_to=pid,
                                                                              start=k)))
            x.stop(rid)
            order.append(rid)
    x.points = [*before, *(pid for sid, _, _ in servers for pid in points_of[sid])]
    x.plan.start_order = order
