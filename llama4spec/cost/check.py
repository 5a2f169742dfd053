"""A budget against what it bounds, checked before anything starts: every problem one line naming
what to drop or the smallest budget that fits."""

from __future__ import annotations

from typing import Mapping

from llama4spec.cost.budget import WALL, Budget
from llama4spec.cost.lines import in_unit, spent
from llama4spec.cost.model import Cost


def _unit(cost: Cost, budget: Budget) -> float | None:
    if cost.unit_s is None:
        return None
    return cost.unit_s if budget.unit == WALL else (cost.unit_device_s or 0.0) / 3600


def budget_problems(at: str, cost: Cost | None, budget: Budget, parts: Mapping[str, Cost] | None) -> list[str]:
    """Why ``budget`` cannot bound ``cost`` (none when it can): nothing to bound, below one server
    start (or one back-to-back block), or below the least (``parts``: a runbook's steps' costs, to
    name what to drop)."""
    if cost is None or not cost.any:
        return [f"{at}: budget {budget.text}: it starts no server or engine and runs no benchmark, so there is "
                f"nothing for the budget to bound; drop it, or put it on the runbook or a step that measures"]
    unit = _unit(cost, budget)
    if unit is not None and unit > budget.amount:
        return [f"{at}: budget {budget.text} is below one {cost.unit_what} ({in_unit(unit, budget)}, its first "
                f"server started and measured at the least); the smallest budget that fits one is "
                f"{in_unit(unit, budget, up=True)}"]
    least = spent(cost, budget)
    if least <= budget.amount:
        return []
    what = (f"{in_unit(least, budget)}: {cost.starts[0]:,} starts and {cost.runs[0]:,} runs even if every question "
            f"is decided at its first look")
    if parts:
        big = sorted(((spent(c, budget), sid) for sid, c in parts.items() if c.any), reverse=True)[:3]
        drop = "drop a step (" + ", ".join(f"'{sid}' {in_unit(x, budget)}" for x, sid in big) + ")"
    else:
        drop = "drop some of its servers (fewer matrix values, lookaheads, concurrencies or blocks)"
    return [f"{at}: budget {budget.text} does not fit the least this costs ({what}); {drop}, or give a budget of "
            f"at least {in_unit(least, budget, up=True)}"]
