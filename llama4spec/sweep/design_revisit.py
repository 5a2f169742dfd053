"""A revisit (``revisit: true`` with ``repeats: auto``): after the first pass, a second start of each
of its servers, each gated (``Revisit``) to start only if its points are still undecided, then a
settle step in server start 2 and its stop. The runs of both starts feed the between-start estimate
(``stats.components.pooled``) through the records' start numbers."""

from __future__ import annotations

from dataclasses import dataclass

from llama4spec.runbook.fields import AUTO
from llama4spec.runbook.matrix import ServerGroup
from llama4spec.sweep.design import Design, Scope
from llama4spec.sweep.expansion import Expansion, Started
from llama4spec.sweep.gates import Revisit


@dataclass(frozen=True)
class RevisitPass(Design):
    """``revisit: true`` with ``repeats: auto``: a second start of each server of the first pass."""

    name = "revisit"
    phase = 40

    @classmethod
    def of(cls, x: Expansion) -> RevisitPass | None:
        return cls() if x.keys.repeats == AUTO and x.keys.revisit else None

    def expand(self, x: Expansion, groups: list[ServerGroup], scope: Scope) -> list[ServerGroup]:
        revisit(x, x.first_pass)
        return groups


def revisit(x: Expansion, first_pass: list[Started]) -> None:
    """The revisit servers of ``first_pass``, appended to ``x``."""
    keys, step = x.keys, x.step
    measured = list(x.points)
    for s in first_pass:
        rid = x.new_id(f"{s.sid}-revisit")
        x.out.append(x.make("serve", rid, needs=x.needs(),
                            description=f"sweep '{step.id}': server {s.sid} started again (revisit), "
                                        f"only if its points are still undecided after the first pass",
                            overrides=s.overrides, gate=Revisit(list(s.points), measured, keys.rule)))
        x.out.append(x.make("settle", x.new_id(f"{rid}-settle"), server=rid, points=list(s.points),
                            earlier=[q for q in measured if q not in s.points], rule=keys.rule, start=2,
                            warmup=keys.warmup))
        x.stop(rid)
