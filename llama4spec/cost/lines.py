"""The dry run's words for a cost and a budget (text only: the renderers print them)."""

from __future__ import annotations

import math

from llama4spec.cost.budget import WALL, Budget
from llama4spec.cost.model import Cost


def figure(x: float, up: bool = False) -> str:
    """A figure to two or three significant digits (``up``: rounded up, for a least that must fit)."""
    places = 0 if x >= 10 else 1 if x >= 1 else 2
    if up:
        x = math.ceil(x * 10 ** places - 1e-9) / 10 ** places
    return f"{x:,.{places}f}" if x > 0 else "0"


def duration(seconds: float, up: bool = False) -> str:
    if seconds < 3600:
        return f"{figure(seconds / 60, up)} min"
    return f"{figure(seconds / 3600, up)} h"


def _span(low: float, high: float, say=figure) -> str:
    return say(low) if say(low) == say(high) else f"{say(low)}-{say(high)}"


def _wall(low: float, high: float) -> str:
    if high < 3600:
        return f"{_span(low / 60, high / 60)} min"
    return f"{_span(low / 3600, high / 3600)} h"


def _count(pair: list[int], one: str, many: str) -> str:
    text = f"{pair[0]:,}" if pair[0] == pair[1] else f"{pair[0]:,}-{pair[1]:,}"
    return f"{text} {one if pair == [1, 1] else many}"


def cost_line(cost: Cost, head: str = "cost") -> str:
    """cost: 20-100 server starts, 240-1,200 runs, 6.3-32 h wall, 50-252 GPU-hours (from profile X)"""
    what = "engine" if cost.engines and not cost.servers else "server" if not cost.engines else "server/engine"
    gpu_h = cost.device_h
    text = (f"{head}: {_count(cost.starts, f'{what} start', f'{what} starts')}, {_count(cost.runs, 'run', 'runs')}, "
            f"{_wall(*cost.wall_s)} wall, {_span(*gpu_h)} GPU-hours")
    sources = "; ".join(r.source for r in cost.sources) or "no rates: no start or run in it"
    text += f" ({sources})"
    if cost.uncounted:
        text += f"; not counted: {'; '.join(cost.uncounted)}"
    return text


def spent(cost: Cost, budget: Budget, least: bool = True) -> float:
    """What ``cost`` spends in ``budget``'s unit (seconds or GPU-hours), its least or its most."""
    i = 0 if least else 1
    return cost.wall_s[i] if budget.unit == WALL else cost.device_h[i]


def in_unit(amount: float, budget: Budget, up: bool = False) -> str:
    return duration(amount, up) if budget.unit == WALL else f"{figure(amount, up)} GPU-hours"


def budget_line(cost: Cost, budget: Budget) -> str:
    """budget: 2 h of wall time; the least (1.2 h) fits, the most (4.8 h) does not: it may stop short."""
    low, high = spent(cost, budget), spent(cost, budget, least=False)
    what = "wall time" if budget.unit == WALL else "GPU-hours"
    head = f"budget: {budget.text} of {what}"
    if high <= budget.amount:
        return f"{head}; even the most ({in_unit(high, budget)}) fits"
    return (f"{head}; the least ({in_unit(low, budget)}) fits, the most ({in_unit(high, budget)}) does not: "
            f"the experiment may need more than it")


def against(cost: Cost, measured_s: float) -> dict | None:
    """status.json's ``cost``: a whole run's wall time against the wall time its plan predicted
    ([least, most], with where the rates came from), in a sentence; None where the plan predicted
    no time (no start, no run)."""
    low, high = cost.wall_s
    if high <= 0:
        return None
    sources = "; ".join(r.source for r in cost.sources) or "no rates"
    if measured_s < low:
        where = f"{100 * (1 - measured_s / low):.0f}% below the least"
    elif measured_s > high:
        where = f"{100 * (measured_s / high - 1):.0f}% above the most"
    else:
        where = "within the predicted range"
    text = (f"wall time {duration(measured_s)}; the dry run predicted {_wall(low, high)} ({sources}): {where}")
    return {"predicted_wall_s": [low, high], "measured_wall_s": measured_s, "source": sources, "sentence": text}
