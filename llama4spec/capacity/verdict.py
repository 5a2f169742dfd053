"""Where one probe of a capacity search stands (``capacity_search``): its verdict at one rate from
its runs (pure, no I/O). ``settings`` and ``probe`` are ``capacity_search.Settings`` and ``Probe``.

The test at one rate. Each run contributes one observation, its attainment (good requests over
requests sent): requests within a run are correlated by queueing, runs at one rate are taken as
exchangeable. The one-sided question "is the mean attainment above the target?" and its mirror
("below?") are tested with Student's t on the runs (``Attainment``), looked at after every run from
``min_runs`` to ``max_runs`` with ``decide``'s look table: Bonferroni-weighted looks (alpha spending,
``early_share`` for the looks before the last), anytime p-values, so a verdict, once reached,
stands whenever the runs stop or however they are spread over the search.

What is controlled. At any true attainment only one of the two verdicts can be wrong (holds when
it is below the target, fails when at or above), so each verdict is wrong with probability at
most ``alpha = 1 - confidence`` over all its looks; no Holm step is needed within a rate. The
interval [L, U] rests on two verdicts and misses the capacity only when one of them is wrong; since
the rates are chosen from earlier runs, the bound stated for a whole search is Bonferroni over its
verdicts (``Capacity.error_bound``: alpha x verdicts, at most 1). It assumes attainment falls as the
rate rises (a cliff is reported, not assumed away) and holds for this server start; t assumes
roughly normal per-run attainments (benchmarks/capacity_search.py measures the error rates).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from llama4spec.stats.looks import looks
from llama4spec.stats.ratio import interval_at
from llama4spec.stats.statistic import Estimate


OPEN, HOLDS, FAILS, UNDECIDED = "open", "holds", "fails", "undecided"


@dataclass(frozen=True)
class Attainment:
    """Per-run attainment against the target (a ``statistic.Statistic``; ``b`` holds the target as runs
    of no spread): Student's t on the mean of the n runs, on n - 1 degrees of freedom, with the
    per-run variance taken as at least the binomial one at the target,
    ``target (1 - target) / requests`` (runs that happen to agree, or all attain 1, do not make it
    vanish)."""

    requests: int
    method: ClassVar[str] = "attainment"

    def values(self, runs: np.ndarray) -> np.ndarray:
        runs = np.asarray(runs, dtype=float)
        return np.where((runs >= 0) & (runs <= 1), runs, np.nan)

    def compare(self, a: np.ndarray, b: np.ndarray, share_a=1.0, share_b=1.0) -> Estimate:
        n = a.shape[-1]
        target = b.mean(-1)
        variance = np.maximum(a.var(-1, ddof=1), target * (1 - target) / self.requests)
        return Estimate(a.mean(-1) - target, np.sqrt(variance / n), np.full(np.shape(variance), n - 1.0))

    def scale(self, x: np.ndarray) -> np.ndarray:
        return x


@dataclass(frozen=True)
class Verdict:
    state: str  # open, holds, fails or undecided
    runs: int  # the runs the verdict rests on (a decided probe: those up to its deciding look)
    attainment: float | None  # their mean
    low: float | None  # the attainment's two-sided interval at ``level`` (the deciding look's)
    high: float | None
    level: float | None
    p_holds: float  # anytime p-value of "the mean attainment is above the target"
    p_fails: float  # of "below the target"
    binding: str | None  # the metric most runs named


@functools.lru_cache(maxsize=4096)
def verdict(settings: Any, probe: Any) -> Verdict:
    """Where one probe stands (the rule: the module docstring)."""
    s, runs = settings, probe.runs[:settings.max_runs]
    n = len(runs)
    binding = _binding(runs)
    if n < s.min_runs:
        mean = float(np.mean([r.attainment for r in runs])) if runs else None
        return Verdict(OPEN, n, mean, None, None, None, 1.0, 1.0, binding)
    statistic = Attainment(min(r.requests for r in runs))
    values = np.full((1, 2, s.max_runs), np.nan)
    values[0, 0, :n] = [r.attainment for r in runs]
    values[0, 1, :] = s.target
    table = looks(values, statistic, s.min_runs, s.max_runs, early_share=s.early_share)
    alpha = 1.0 - s.confidence
    state, look = (UNDECIDED if n >= s.max_runs else OPEN), n
    for at in range(s.min_runs, n + 1):
        k = at - s.min_runs
        if table.anytime_up[0, 0, k] <= alpha or table.anytime_down[0, 0, k] <= alpha:
            state, look = (HOLDS if table.anytime_up[0, 0, k] <= alpha else FAILS), at
            break
    k = look - s.min_runs
    est = Estimate(*(getattr(table.estimate, f)[0, 0, k] for f in ("center", "se", "df")))
    if state == OPEN and n > s.min_runs and _futile(est, n, s, alpha * float(table.weights[-1])):
        state = UNDECIDED
    level = 1.0 - 2.0 * alpha * float(table.weights[k])
    interval = interval_at(statistic, est, level)
    return Verdict(state, look, float(est.center) + s.target, max(0.0, interval.low + s.target),
                   min(1.0, interval.high + s.target), level, float(table.anytime_up[0, 0, k]),
                   float(table.anytime_down[0, 0, k]), binding)


def _futile(est: Estimate, n: int, s: Any, last_level: float) -> bool:
    """Were the mean and the per-run spread to stay as measured on ``n`` runs, not even the last
    look (``max_runs`` runs, one-sided ``last_level``) would decide: the probe stops undecided now.
    It never makes a verdict, so the error rates stand."""
    from scipy import special

    projected = float(est.se) * math.sqrt(n / s.max_runs)
    return abs(float(est.center)) < float(special.stdtrit(s.max_runs - 1, 1.0 - last_level)) * projected


def _binding(runs: tuple[Any, ...]) -> str | None:
    """The metric most runs named (a tie: the one named last)."""
    named = [r.binding for r in runs if r.binding is not None]
    return max(reversed(named), key=named.count) if named else None
