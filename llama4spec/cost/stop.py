"""Keeping to a budget while an experiment runs: what its steps have spent so far (their seconds, as
the run's status records them), what one more unit of work (a back-to-back block) will likely take
(the mean of the units done, else the planned estimate), and whether it still fits. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from llama4spec.cost.budget import WALL, Budget
from llama4spec.cost.lines import in_unit


@dataclass(frozen=True)
class Spent:
    """What some steps spent: wall seconds, device-seconds, and the units of work done."""

    wall_s: float
    device_s: float
    units: int

    def per_unit(self) -> tuple[float, float] | None:
        """The mean wall and device seconds of a unit done; None before the first."""
        if self.units < 1:
            return None
        return self.wall_s / self.units, self.device_s / self.units


def spent_by(entries: Iterable[Mapping[str, Any]], ids: set[str], devices: Mapping[str, int],
             unit_ids: set[str]) -> Spent:
    """What the status ``entries`` of steps ``ids`` spent: their seconds; each second of a step
    counts ``devices[id]`` device-seconds (the devices held while it ran); a done step in
    ``unit_ids`` completes a unit."""
    wall = device = 0.0
    units = 0
    for e in entries:
        sid = str(e.get("id"))
        if sid not in ids:
            continue
        seconds = e.get("seconds")
        if isinstance(seconds, (int, float)) and seconds >= 0:
            wall += float(seconds)
            device += float(seconds) * devices.get(sid, 0)
        units += sid in unit_ids and e.get("status") == "done"
    return Spent(wall, device, units)


def amount(budget: Budget, wall_s: float, device_s: float) -> float:
    """Seconds or device-seconds in ``budget``'s unit (seconds, or GPU-hours)."""
    return wall_s if budget.unit == WALL else device_s / 3600.0


@dataclass(frozen=True)
class Over:
    """A budget the next unit would exceed, and by what."""

    budget: Budget
    spent: float  # in the budget's unit
    next: float  # the next unit's likely cost, in the budget's unit
    whose: str  # "the step's", "the runbook's"

    def text(self, unit: str = "block") -> str:
        b = self.budget
        return (f"{self.whose} budget {b.text} would be exceeded by one more {unit}: {in_unit(self.spent, b)} "
                f"spent, a {unit} takes about {in_unit(self.next, b, up=True)}")


def over(budget: Budget | None, wall_s: float, device_s: float, unit: tuple[float, float], whose: str) -> Over | None:
    """The budget when what is spent (``wall_s``, ``device_s``) plus one more unit (its likely wall
    and device seconds) would exceed it; None when it fits (or there is no budget)."""
    if budget is None:
        return None
    now, more = amount(budget, wall_s, device_s), amount(budget, *unit)
    return Over(budget, now, more, whose) if now + more > budget.amount else None
