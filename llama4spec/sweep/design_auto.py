"""``design: auto`` (the default): back-to-back blocks where two servers fit on GPUs
(``design_interleaved.chosen_design``), else the sequential design, and why (the sweep's
``SweepPlan``: ``chosen``, ``auto_why``)."""

from __future__ import annotations

from dataclasses import dataclass

from llama4spec.runbook.fields import AUTO
from llama4spec.runbook.matrix import ServerGroup
from llama4spec.sweep.design import Design, Scope
from llama4spec.sweep.design_interleaved import chosen_design
from llama4spec.sweep.expansion import Expansion
from llama4spec.sweep.planned import AUTO_DESIGN, INTERLEAVED, SEQUENTIAL

AUTO_BLOCKS = 3  # design: auto with a fixed repeats: the back-to-back blocks a candidate gets where they fit


@dataclass(frozen=True)
class Auto(Design):
    """Chooses the design before the others run (the sweep's ``chosen``); its stop reason: why it
    took the sequential design."""

    name = AUTO_DESIGN
    phase = 0
    choice = True
    starts: int
    repeats: int | str

    @classmethod
    def of(cls, x: Expansion) -> Auto | None:
        return cls(x.keys.starts, x.keys.repeats) if x.keys.design == AUTO_DESIGN else None

    def expand(self, x: Expansion, groups: list[ServerGroup], scope: Scope) -> list[ServerGroup]:
        why = chosen_design(x, groups, scope.environ)
        if why is None:
            x.plan.chosen = INTERLEAVED
            x.refine(starts=self.starts if self.starts > 1 or self.repeats == AUTO else AUTO_BLOCKS)
        else:
            x.plan.chosen, x.plan.auto_why = SEQUENTIAL, why
            self.state.stop = why
        return groups
