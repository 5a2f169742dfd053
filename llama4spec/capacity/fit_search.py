"""The fitted search (``search: fit``): where each next run of a server goes, from the curve
``capacity_fit`` fits to its runs so far, and why it stops (pure, no I/O).

The search (``decide``, a function of the runs alone, so a resumed search refits and goes on).
From ``start`` it doubles the rate while every run held (halves while every run failed) until a
rate that held lies below one that failed. Then each next run goes where it most narrows the fitted
crossing (``capacity_place``: among the grid's rates, the one whose run leaves the crossing's least
delta-method variance, a sequential c-optimal design after Wu, JASA 1985; runs bunched at the
crossing leave the slope, and so the interval, unknown), kept within [lowest rate, UP x highest
rate] of the runs so far (a crossing the fit extrapolates below the rates probed is no place to
measure: on a server whose attainment is noisy at every rate, a flat fit's crossing would otherwise
walk the runs down, each one longer; above them it is, a doubling at a time) and no deeper into
overload than a fitted attainment of ``capacity_place.LOWEST``;
while no fit exists (runs separated: all good below a rate, none above), to the geometric
midpoint of the closest holding and failing rates. Rates lie on a geometric grid from ``start``
of ratio ``1 + precision / GRID``, so runs repeat at one rate and the lack-of-fit test can see
the runs' own noise. The search stops when the interval's relative half-width,
(high - low) / (2 x estimate), is at most ``precision`` after at least ``MIN_FIT_RUNS`` runs,
or at ``max_runs`` with the interval as it stands; a closed interval still wider than ``precision``
then says about how many runs in all would narrow it at the spread its runs had (the half-width
scaled as one over the root of the runs: a rough figure, fewer where the new runs go to the
crossing), and what narrows it sooner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from llama4spec.capacity import place as capacity_place
from llama4spec.capacity.curve import Fit, crossing, logit_of
from llama4spec.capacity.fit import (MIN_FIT_RUNS, Answer, Run, Settings, answer, bracketed, kept_runs, robust_fit,
                                              wide_words)


UP = 2.0  # a fitted crossing above every rate probed is measured at most this many times the highest


GRID = 4  # probed rates lie on a geometric grid of ratio 1 + precision / GRID from the start rate


ROUND_DIGITS = 4


PRECISION_STOP, BUDGET_STOP, CAP_STOP, FLOOR_STOP, SHAPE_STOP = "precision", "budget", "cap", "floor", "shape"


@dataclass(frozen=True)
class Decision:
    rate: float | None  # the next run's rate; None: the search is over
    reason: str  # why it goes there, or why it stopped
    stop: str | None = None  # precision, budget, cap, floor or shape; None while it goes on
    final: Answer | None = None  # the answer, once stopped


def snap(settings: Settings, rate: float) -> float:
    """``rate`` on the search's grid: ``start x (1 + precision / GRID) ** k``, within [floor, cap]."""
    s = settings
    step = math.log1p(s.precision / GRID)
    k = round(math.log(rate / s.start) / step)
    return float(f"{min(s.cap, max(s.floor, s.start * math.exp(k * step))):.{ROUND_DIGITS}g}")


def _candidates(settings: Settings, low: float, high: float) -> list[float]:
    """The search's grid rates from ``low`` to ``high`` (both snapped onto the grid)."""
    s = settings
    step = math.log1p(s.precision / GRID)
    first, last = (round(math.log(x / s.start) / step) for x in (low, high))
    return sorted({snap(s, s.start * math.exp(k * step)) for k in range(first, last + 1)})


def _placed(settings: Settings, runs: Sequence[Run], f: Fit, kept: Sequence[Run]) -> float:
    """The next run's rate: among the grid's rates from the lowest probed to UP times the highest, the
    one whose run most narrows the fitted crossing (``capacity_place.best_rate``)."""
    rates = [r.rate for r in runs]
    candidates = _candidates(settings, min(rates), min(settings.cap, UP * max(rates)))
    rate, _ = capacity_place.best_rate(f.b0, f.b1, f.center, logit_of(settings.target),
                                       [(r.rate, r.total) for r in kept], candidates)
    return rate


def _stop(settings: Settings, runs: Sequence[Run], stop: str, reason: str) -> Decision:
    """The search stopped: its answer, and ``reason`` with what would narrow an interval left wider than
    the precision (``wide_words``)."""
    final = answer(settings, runs)
    why = wide_words(final)
    return Decision(None, f"{reason}; {why}" if why else reason, stop, final)


def decide(settings: Settings, runs: Sequence[Run]) -> Decision:
    """The next run's rate and why, or the final answer with why the search stopped (the rule: the
    module docstring). ``runs``: every run of this server so far, in any order."""
    s = settings
    if not runs:
        return Decision(snap(s, s.start), "start")
    if len(runs) >= s.max_runs:
        return _stop(s, runs, BUDGET_STOP, f"stopped: {s.max_runs} runs, the probe budget")
    holds = [r.rate for r in runs if r.attainment >= s.target]
    fails = [r.rate for r in runs if r.attainment < s.target]
    if not fails:
        top = max(holds)
        if top >= s.cap:
            return _stop(s, runs, CAP_STOP, f"stopped: the SLO held up to the highest rate, {s.cap:g}")
        return Decision(min(snap(s, 2 * top), s.cap), f"up from {top:g}, which held")
    if not holds:
        bottom = min(fails)
        if bottom <= s.floor:
            return _stop(s, runs, FLOOR_STOP, f"stopped: the SLO failed down to the lowest rate, {s.floor:g}")
        return Decision(max(snap(s, bottom / 2), s.floor), f"down from {bottom:g}, which failed")
    if not bracketed(runs, s.target):
        return _stop(s, runs, SHAPE_STOP, "stopped: every rate that held lies above every rate that failed")
    f, outliers = robust_fit(runs)
    kept = kept_runs(runs, outliers)
    estimate, low, high = crossing(f, s.target, s.confidence) if f is not None else (None, None, None)
    if estimate is not None:
        if low is not None and high is not None and len(runs) >= MIN_FIT_RUNS \
                and (high - low) / (2 * estimate) <= s.precision:
            return _stop(s, runs, PRECISION_STOP, f"stopped: {estimate:.4g} req/s [{low:.4g}, {high:.4g}], within "
                                                  f"+-{s.precision:.0%}")
        rate = _placed(s, runs, f, kept)
        where = f"[{low:.4g}, {high:.4g}]" if low is not None and high is not None else "open"
        return Decision(rate, f"where a run most narrows the crossing's interval (fitted crossing {estimate:.4g}, "
                              f"interval {where})")
    upper = min(r for r in fails if r > min(holds))
    lower = max(r for r in holds if r < upper)
    mid = snap(s, math.sqrt(lower * upper))
    if lower < mid < upper:
        return Decision(mid, f"between {lower:g}, which held, and {upper:g}, which failed (no fit yet)")
    counts = {x: sum(1 for r in runs if r.rate == x) for x in (lower, upper)}
    rate = min(counts, key=counts.get)
    return Decision(rate, f"again at {rate:g}: {lower:g} held and {upper:g} failed, adjacent rates (no fit yet)")
