"""A plan's price before it starts: each planned step's work (its kind's ``work`` hook), in the
order the steps run, turned into wall time and device-hours by the rates of the experiment it
belongs to (``cost.rates``: the profile a step names, else its hardware config's estimates).

Each cost is carried by one step of the runbook as written: an expanding step (sweep, capacity,
breakeven) carries the steps it stands for; a serve step its benchmarks and settle steps; any other
step that starts something, its own. Time passes one step after another; a server holds its devices
from its start to its stop step; a server started beside another (back-to-back blocks) starts in the
same time. The budgets (``budget:`` on the runbook and on a step) are checked against the least."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama4spec.cost.budget import Budget
from llama4spec.cost.check import budget_problems
from llama4spec.cost.model import Cost, Rates, Work
from llama4spec.cost.rates import from_hardware, from_profile

NO_RATES = "time: neither a noise profile nor the hardware config gives a start's and a run's seconds"


@dataclass
class Pricing:
    steps: dict[str, Cost]  # by the step whose dry-run line carries it, in the order they run
    total: Cost
    budgets: dict[str, Budget] = field(default_factory=dict)  # step id -> its budget
    budget: Budget | None = None  # the runbook's
    heads: dict[str, str] = field(default_factory=dict)  # step id -> the step whose line carries its cost

    def record(self, step_id: str) -> dict[str, Any]:
        """What a step's plan.json entry carries: its cost and budget, and the runbook's budget."""
        out: dict[str, Any] = {}
        if step_id in self.steps:
            out["cost"] = self.steps[step_id].record()
        if step_id in self.budgets:
            out["budget"] = self.budgets[step_id].record()
        if self.budget is not None:
            out["runbook_budget"] = self.budget.record()
        return out


@dataclass
class _Life:
    """The least a group's first server costs from its start to its stop: the smallest budget unit."""

    server: str
    wall_s: float = 0.0
    device_s: float = 0.0
    what: str = "server start"


class _Walk:
    def __init__(self, by_id: dict[str, Any]) -> None:
        self.by_id = by_id
        self.works: dict[str, Work] = {}
        self.group: dict[str, str] = {}
        self.costs: dict[str, Cost] = {}
        self.rates: dict[str, Rates | None] = {}
        self.live: tuple[dict[str, int], dict[str, int]] = ({}, {})
        self.lives: dict[str, _Life] = {}

    def work_of(self, step_id: str | None) -> Work | None:
        return self.works.get(step_id) if step_id else None

    def planned(self, step_id: str) -> Any:
        return self.by_id.get(step_id) if step_id in self.works else None

    def head(self, p: Any) -> str:
        step = p.step
        if step.part_of:
            return step.part_of
        server = step.server
        return self.group.get(server, p.id) if server else p.id

    def rates_of(self, head: str, p: Any) -> Rates | None:
        if head not in self.rates:
            owner = self.by_id.get(head, p)
            profile = owner.inputs.get("noise") if owner is not None else None
            found = from_profile(Path(profile)) if profile else None
            if found is None and p.composed is not None:
                found = from_hardware(p.composed.cfg.hardware)
            self.rates[head] = found
        return self.rates[head]

    def step(self, p: Any) -> None:
        work = self.works[p.id] = p.step.kind_of.work(p, self)
        head = self.group[p.id] = self.head(p)
        if p.step.traits.stops_server:
            for live in self.live:
                live.pop(p.step.server, None)
            life = self.lives.get(head)
            if life is not None and life.server == p.step.server:
                self._close(head)
        if not work.any:
            return
        cost = self.costs.setdefault(head, Cost())
        rates = self.rates_of(head, p)
        cost.took(work, rates)
        if rates is None and NO_RATES not in cost.uncounted:
            cost.uncounted.append(NO_RATES)
        least = self._spend(cost, work, rates, p.id)
        self._live_unit(head, cost, work, p.id, least)

    def _spend(self, cost: Cost, work: Work, rates: Rates | None, sid: str) -> tuple[float, float]:
        start_s, run_s = (rates.start_s, work.run_s or rates.run_s) if rates else (0.0, 0.0)
        least = (0.0, 0.0)
        for i in (0, 1):
            starts, runs = work.starts[i], work.runs[i]
            wall = (0 if work.beside else starts * start_s) + runs * (run_s + (work.wait_s if rates else 0.0))
            if work.holds and starts:
                self.live[i][sid] = work.devices
            held = sum(self.live[i].values()) + (work.devices if work.engine and starts else 0)  # engines: one at a time
            device_s = wall * held + (starts * start_s * work.devices if work.beside else 0)
            cost.spend(i, starts, runs, wall, device_s)
            if i == 0:
                least = (wall, device_s)
        return least

    def _live_unit(self, head: str, cost: Cost, work: Work, sid: str, least: tuple[float, float]) -> None:
        life = self.lives.get(head)
        if life is None and cost.unit_s is None and work.holds and work.starts[0] and not work.beside:
            life = self.lives[head] = _Life(sid)
        if life is None:
            return
        life.wall_s += least[0]
        life.device_s += least[1]
        if work.beside:
            life.what = "block"

    def _close(self, head: str) -> None:
        life = self.lives.pop(head)
        cost = self.costs[head]
        cost.unit_s, cost.unit_device_s, cost.unit_what = life.wall_s, life.device_s, life.what

    def finish(self) -> None:
        for head in list(self.lives):
            self._close(head)


def price(runbook: Any, steps: list[Any]) -> Pricing:
    """The cost of each step that starts or runs something, and of the whole plan (``steps``: the
    planned steps in the order they run)."""
    walk = _Walk({p.id: p for p in steps})
    for p in steps:
        walk.step(p)
    walk.finish()
    total = Cost()
    for cost in walk.costs.values():
        total.merge(cost)
    total.unit_s = min((c.unit_s for c in walk.costs.values() if c.unit_s is not None), default=None)
    if total.unit_s is not None:
        smallest = next(c for c in walk.costs.values() if c.unit_s == total.unit_s)
        total.unit_device_s, total.unit_what = smallest.unit_device_s, smallest.unit_what
    budgets = {p.id: p.step.budget for p in steps if p.step.budget is not None}
    return Pricing(walk.costs, total, budgets, runbook.budget, walk.group)


def problems(pricing: Pricing, runbook: Any) -> list[str]:
    """Every budget that cannot hold what it bounds, one line each (``cost.check``)."""
    at = f"{runbook.path}"
    found = []
    for sid, budget in pricing.budgets.items():
        head = pricing.heads.get(sid, sid)
        if head != sid and head in pricing.steps:
            found.append(f"{at}: step '{sid}': budget {budget.text}: its runs are counted with server '{head}', "
                         f"whose start they share; put the budget on step '{head}'")
            continue
        found += budget_problems(f"{at}: step '{sid}'", pricing.steps.get(sid), budget, None)
    if pricing.budget is not None:
        found += budget_problems(at, pricing.total, pricing.budget, pricing.steps)
    return found



def document(plan: Any) -> dict[str, Any]:
    """``--dry-run --json`` (schema ``llama4spec.plan/1``): the plan as plan.json holds it, each step's
    cost, the whole plan's, and the budgets."""
    pricing: Pricing = plan.pricing
    return {"schema": "llama4spec.plan/1", "runbook": plan.runbook.name, "run_dir": str(plan.run_dir),
            "budget": pricing.budget.record() if pricing.budget is not None else None,
            "cost": {"total": pricing.total.record(), "steps": {sid: c.record() for sid, c in pricing.steps.items()}},
            "steps": plan.to_record()}


def run_cost(pricing: Pricing | None, summary: dict[str, Any], seconds: float) -> dict[str, Any]:
    """status.json's ``cost`` (``cost.lines.against``) for a run that took ``seconds``: a whole run's
    wall time against its plan's prediction ([least, most]: the steps a decision skips are in the
    range); nothing for a run that failed or resumed steps measured before it (it did not do the
    work priced)."""
    from llama4spec.cost.lines import against

    whole = summary.get("status") == "done" and not summary.get("resumed") and \
        not any(e.get("resumed") for e in summary.get("steps") or [])
    found = against(pricing.total, seconds) if pricing is not None and whole else None
    return {"cost": found} if found is not None else {}
