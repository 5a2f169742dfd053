"""A sweep's rule for measuring until decided (``repeats: auto``), declared once: each field is a
key of the ``sweep`` step (its name, type, default, bounds and reader) with its help text. The sweep
step reads them as one ``Rule`` and carries that object whole into the steps it generates: its
settle steps (``settle``), its revisit servers and the servers dominance may skip
(``gates``). A new setting of the rule is one field here, and where the decisions use it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama4spec.stats.interval import CONFIDENCE
from llama4spec.stats.looks import MAX_REPEATS, MIN_REPEATS
from llama4spec.runbook import fields
from llama4spec.runbook.fields import described

BLOCK_RUNS = 3  # design: interleaved with repeats: auto: the pairs of runs a block (blocks are added one at a time)
MAX_BLOCK_RUNS = 10  # ... the most a noise profile's costs set it to


@dataclass(frozen=True)
class Rule:
    """How a sweep with ``repeats: auto`` measures each point, as the sweep step's keys give it."""

    min_repeats: int = described(fields.count(MIN_REPEATS, 2, fields.MAX_REPEATS), "repeats: auto: runs every point gets",
                                 flag=False)
    max_repeats: int = described(fields.count(MAX_REPEATS, 2, fields.MAX_REPEATS), "repeats: auto: the most a point gets",
                                 flag=False)
    confidence: float = described(fields.level(CONFIDENCE),
                                  "repeats: auto: of every verdict at one concurrency together (and of the bounds "
                                  "that find a larger lookahead dominated)", flag=False)

    def problems(self) -> list[str]:
        """Why these settings contradict one another (every problem, one line each)."""
        if self.min_repeats > self.max_repeats:
            return [f"min_repeats ({self.min_repeats}) is larger than max_repeats ({self.max_repeats}); lower "
                    f"min_repeats or raise max_repeats"]
        return []

    def record(self) -> dict[str, Any]:
        """The rule as a point's stop record names it."""
        return {"min_repeats": self.min_repeats, "max_repeats": self.max_repeats, "confidence": self.confidence}
