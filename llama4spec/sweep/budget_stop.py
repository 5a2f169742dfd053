"""Back-to-back blocks stopped at the budget: before a further block starts (the ``MoreBlocks``
gate), the sweep's steps so far (their seconds in the run's status.json) and the likely cost of one
more block (the mean of the blocks done) are held against the sweep step's budget and the
runbook's. When a block would exceed one, it and every later block are not started, and the reason
says what is decided, what is not, and which open questions one more block would likely settle (if
the blocks' mean and spread stayed as measured). The arithmetic is ``cost.stop``'s; the sentences
are pure functions of an analysis (``stats.speedup_results.Analysis``)."""

from __future__ import annotations

import math
from typing import Any

from llama4spec.stats.looks import look_weights
from llama4spec.stats.tdist import t_quantile
from llama4spec.cost.model import devices
from llama4spec.cost.stop import Over, over, spent_by

STOPPED = "stopped at the budget"


def likely_settled(comparison: Any, blocks: int, rule: tuple[int, int, float]) -> bool:
    """Whether one more block would likely decide an undecided block comparison: its block mean as
    measured, its standard error shrunk by sqrt(J / (J + 1)), against the next look's one-sided
    level (the Holm level it is tested at now, moved to the next look's share of alpha)."""
    iv = getattr(comparison, "interval", None)
    level = getattr(comparison, "level", None)
    lo, hi = rule[0], rule[1]
    if iv is None or level is None or not iv.low > 0 or not math.isfinite(iv.high) or blocks + 1 > hi:
        return False
    if not lo <= blocks <= hi or iv.df <= 0:
        return False
    weights = look_weights(lo, hi)
    now, then = float(weights[blocks - lo]), float(weights[blocks + 1 - lo])
    half = (math.log(iv.high) - math.log(iv.low)) / 2
    se = half / t_quantile(iv.df, 1 - level)
    center = (math.log(iv.high) + math.log(iv.low)) / 2
    if not se > 0:
        return False
    t_next = abs(center) / (se * math.sqrt(blocks / (blocks + 1)))
    return t_next > t_quantile(blocks, 1 - level / now * then)


def said(analysis: Any, blocks: int, rule: tuple[int, int, float]) -> str:
    """What is decided at each client setting, what is not, and what one more block would likely settle."""
    decided, open_, settle = [], [], []
    for a in analysis.at:
        pick = a.pick
        (decided if pick is not None and pick.decided else open_).append(
            f"{a.title}: {pick.sentence() if pick is not None else 'no measurement'}")
        for r in a.rows:
            c = r.comparison
            if c is not None and not c.decided and c.method == "blocks" and likely_settled(c, blocks, rule):
                settle.append(f"{r.point.name} against no speculation at {a.title}")
    parts = [f"decided: {'; '.join(decided) if decided else 'nothing'}",
             f"undecided: {'; '.join(open_) if open_ else 'nothing'}",
             "one more block would likely settle " + ("; ".join(settle) if settle else "none of the open questions "
                                                      "(more blocks than one are needed)")]
    return ". ".join(parts)


def budget_stop(plan: Any, sweep_id: str, p: Any, status: dict[str, Any] | None) -> Over | None:
    """The budget (the sweep step's, else the runbook's) that one more block, started at serve step
    ``p``, would exceed; None when both fit. ``status``: the run's status.json as read."""
    steps = [q for q in plan.steps if q.step.part_of == sweep_id or q.id == sweep_id]
    ids = {q.id for q in steps}
    held = {q.id: 2 * devices(q.composed.cfg) for q in steps if q.composed is not None}
    units = {q.id for q in steps if q.step.traits.serves and getattr(q.step.keys, "beside", None)}
    entries = [e for e in (status or {}).get("steps") or [] if isinstance(e, dict)]
    mine = spent_by(entries, ids, held, units)
    cfg = p.composed.cfg if p.composed is not None else None
    unit = mine.per_unit() or _planned(plan, sweep_id, 2 * devices(cfg) if cfg is not None else 0)
    found = over(plan.get(sweep_id).step.budget, mine.wall_s, mine.device_s, unit, "the step's")
    if found is None:  # the runbook's: every step's seconds (devices counted for the sweep's steps only)
        every = spent_by(entries, {str(e.get("id")) for e in entries}, held, units)
        found = over(plan.runbook.budget, every.wall_s, every.device_s, unit, "the runbook's")
    return found


def _planned(plan: Any, sweep_id: str, held: int) -> tuple[float, float]:
    """A block's planned wall and device seconds: the sweep's planned least over its least blocks."""
    pricing = getattr(plan, "pricing", None)
    cost = pricing.steps.get(sweep_id) if pricing is not None else None
    if cost is None or cost.unit_s is None:
        return 0.0, 0.0
    return float(cost.unit_s), float(cost.unit_s) * held


def stop_note(not_run: dict[str, str] | None) -> str | None:
    """The budget stop among the run's skipped steps (``rundir.not_run``'s reasons), without its
    prefixes; None when the sweep did not stop at a budget."""
    for reason in (not_run or {}).values():
        if f"{STOPPED}: " in reason:
            return reason.split(f"{STOPPED}: ", 1)[1]
    return None
