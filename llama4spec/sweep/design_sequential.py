"""The sequential design (``design: sequential``, the default; an interleaved sweep whose servers do
not fit side by side): each server started in turn, measured at every client-side setting (with
``repeats: auto``, then settled), stopped before the next one starts. With ``skip_dominated`` a
server carries the ``Dominance`` gate over the points measured before it."""

from __future__ import annotations

from dataclasses import dataclass

from llama4spec.runbook.matrix import ServerGroup
from llama4spec.sweep.design import Design, Scope
from llama4spec.sweep.expansion import Expansion, Started
from llama4spec.sweep.gates import Dominance
from llama4spec.sweep.planned import SEQUENTIAL


@dataclass(frozen=True)
class Sequential(Design):
    """The servers the designs before it left, each started in turn (every sweep has this pass;
    with none left it writes nothing); its servers are the first pass a revisit starts again."""

    name = SEQUENTIAL
    phase = 30
    choice = True
    skip_dominated: bool

    @classmethod
    def of(cls, x: Expansion) -> Sequential:
        return cls(x.keys.skip_dominated)

    def expand(self, x: Expansion, groups: list[ServerGroup], scope: Scope) -> list[ServerGroup]:
        x.first_pass = sequential(x, groups)
        return []


def sequential(x: Expansion, groups: list[ServerGroup]) -> list[Started]:
    """Each server of ``groups`` in turn, appended to ``x``; returns them as started."""
    keys, step = x.keys, x.step
    started = []
    for n, group in enumerate(groups, 1):
        sid, what = x.server_id(n, group)
        overrides = [*keys.overrides, *group.overrides]
        x.out.append(x.make("serve", sid, needs=x.needs(), description=f"sweep '{step.id}': server for {what}",
                            overrides=list(overrides),
                            gate=Dominance(list(x.points), keys.rule) if keys.skip_dominated else None))
        first = len(x.points)
        x.out += x.measured_by(sid)
        x.stop(sid)
        started.append(Started(sid, overrides, x.points[first:]))
    return started
