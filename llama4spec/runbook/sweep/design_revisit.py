"""A revisit (``revisit: true`` with ``repeats: auto``): after the first pass, a second start of each
of its servers, each gated (``Revisit``) to start only if its points are still undecided, then a
settle step in server start 2 and its stop. The runs of both starts feed the between-start estimate
(``analysis.noise.pooled``) through the records' start numbers."""

from __future__ import annotations

from llama4spec.runbook.sweep.design_sequential import Started
from llama4spec.runbook.sweep.expansion import Expansion
from llama4spec.runbook.sweep.gates import Revisit


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
