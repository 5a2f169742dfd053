"""Did a point get slower between two runs (an upgrade's, say)? The statistics of ``regress`` (pure).

Each point measured in both runs is compared on output throughput, mean TPOT, mean TTFT and mean
acceptance length: the ratio of geometric means (new over old) with its 95% interval by Welch's t on
the mean logs (``statistic.LogRatio``). Two runs are separate server starts even when nothing changed,
so the timed figures carry the between-start variance of a noise estimate on each side (the runs'
own starts pooled with their hardware's prior, ``stats.components``; shrunk by the starts a point's
runs spread over); acceptance is counted, not timed, and carries none.

A verdict (regressed, improved) is declared by Holm's step-down over every comparison of the
table, both directions: at most 5% chance of any false verdict over the whole table (family-wise).
A comparison whose own 95% interval excludes no change but that the table's family does not declare
is "no significant change". A point with fewer than 2 runs a side is not tested.

``gate``: a point regressed by more than PCT percent with confidence: a regressed verdict whose
bound at its Holm level still loses more than PCT percent of speed (throughput or acceptance lower,
or TPOT or TTFT higher, by that factor).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from llama4spec import figures as registry
from llama4spec.figures import Figure
from llama4spec.stats.interval import CONFIDENCE
from llama4spec.stats.looks import holm
from llama4spec.stats.ratio import interval_at, start_shares
from llama4spec.stats.statistic import LogRatio
from llama4spec.stats.noise import Noise, noise_record

REGRESSED, IMPROVED, NO_CHANGE, NOT_TESTED = "regressed", "improved", "no significant change", "not tested"




@dataclass(frozen=True)
class Runs:
    """One metric of one point in one run: its per-run values and each run's server start."""

    values: tuple[float, ...]
    starts: tuple[int, ...] = ()

    def usable(self) -> list[float]:
        return [v for v in self.values if v > 0 and np.isfinite(v)]


@dataclass
class Change:
    """One metric of one point, new against old."""

    metric: Figure
    old: float | None  # median of the old runs
    new: float | None
    ratio: float | None  # geometric means (medians with fewer than 2 runs a side), new over old
    low: float | None = None  # the ratio's 95% interval
    high: float | None = None
    verdict: str = NOT_TESTED
    loss_pct: float | None = None  # regressed: the speed lost at least, at the verdict's Holm level
    p: tuple[float, float] = (1.0, 1.0)  # one-sided p-values: new higher, new lower

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else 100.0 * (self.ratio - 1.0)

    def text(self) -> str:
        """``-20.1% [-35.0, -2.3]``; ``-`` without a ratio."""
        if self.change_pct is None:
            return "-"
        if self.low is None or self.high is None:
            return f"{self.change_pct:+.1f}%"
        return f"{self.change_pct:+.1f}% [{100 * (self.low - 1):+.1f}, {100 * (self.high - 1):+.1f}]"


@dataclass
class PointChange:
    old_id: str
    new_id: str
    changes: list[Change] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.old_id if self.old_id == self.new_id else f"{self.old_id} -> {self.new_id}"

    @property
    def verdict(self) -> str:
        verdicts = [c.verdict for c in self.changes]
        for v in (REGRESSED, IMPROVED, NO_CHANGE):
            if v in verdicts:
                return v
        return NOT_TESTED


def _median(values: Sequence[float]) -> float | None:
    return float(np.median(values)) if values else None


def _statistic(metric: Figure, noise: Noise | None) -> LogRatio:
    return LogRatio(noise if metric.timed else None)


def _estimate(metric: Figure, old: Runs, new: Runs, noise: Noise | None):
    statistic = _statistic(metric, noise)
    a, b = (statistic.values(np.asarray(r.usable(), float)) for r in (new, old))
    shares = [float(start_shares(r.starts[:len(r.usable())] or [1] * len(r.usable()))[-1]) for r in (new, old)]
    return statistic, statistic.compare(a, b, *shares)


def compare_points(pairs: Mapping[tuple[str, str], Mapping[str, tuple[Runs, Runs]]],
                   confidence: float = CONFIDENCE, noise: Noise | None = None) -> list[PointChange]:
    """Every point (old id, new id) -> metric key -> (old runs, new runs): its changes, with
    verdicts by Holm over every tested comparison of the table at ``confidence``; the timed figures
    carry ``noise``'s between-start term (None: none)."""
    from scipy import special

    out, tested, estimates = [], [], []
    for (old_id, new_id), metrics in pairs.items():
        point = PointChange(old_id, new_id)
        for metric in registry.regressed():
            if metric.key not in metrics:
                continue
            old, new = metrics[metric.key]
            xs, ys = old.usable(), new.usable()
            if not xs and not ys:  # not measured in either run (acceptance without a draft)
                continue
            med_old, med_new = _median(xs), _median(ys)
            ratio = med_new / med_old if med_old and med_new is not None else None
            change = Change(metric, med_old, med_new, ratio)
            point.changes.append(change)
            if len(xs) >= 2 and len(ys) >= 2:
                statistic, est = _estimate(metric, old, new, noise)
                iv = interval_at(statistic, est, confidence)
                change.ratio, change.low, change.high = iv.ratio, iv.low, iv.high
                t, df = float(est.t()), float(est.df)
                change.p = (float(special.stdtr(df, -t)), float(special.stdtr(df, t)))
                change.verdict = NO_CHANGE
                tested.append(change)
                estimates.append((statistic, est))
        out.append(point)
    _decide(tested, estimates, 1.0 - confidence)
    return out


def _decide(tested: list[Change], estimates: list, alpha: float) -> None:
    """Holm over both one-sided hypotheses of every tested comparison; a declared one gets its
    verdict, and a regression the speed it loses at least at its step's level."""
    if not tested:
        return
    p = np.array([c.p[0] for c in tested] + [c.p[1] for c in tested])
    rejected = holm(p, alpha)
    order = np.argsort(np.nan_to_num(p, nan=1.0), kind="stable")
    step = np.empty(p.size, dtype=int)
    step[order] = np.arange(p.size)
    n = len(tested)
    for i, (c, (statistic, est)) in enumerate(zip(tested, estimates)):
        for side in (i, i + n):
            if not rejected[side]:
                continue
            higher = side == i
            c.verdict = IMPROVED if higher == c.metric.higher_is_better else REGRESSED
            if c.verdict == REGRESSED:
                level = alpha / (p.size - int(step[side]))
                iv = interval_at(statistic, est, 1.0 - 2.0 * level)
                kept = iv.high if c.metric.higher_is_better else 1.0 / iv.low  # the most speed kept
                c.loss_pct = max(0.0, 100.0 * (1.0 - kept))


def gate(points: Sequence[PointChange], pct: float) -> list[str]:
    """One line per point regressed by more than ``pct`` percent with confidence, naming its metrics."""
    out = []
    for pt in points:
        worse = [f"{c.metric.row} {c.old:.4g} -> {c.new:.4g} (at least {c.loss_pct:.1f}% slower)" for c in pt.changes
                 if c.verdict == REGRESSED and c.loss_pct is not None and c.loss_pct > pct and c.old and c.new]
        if worse:
            out.append(f"{pt.id}: {'; '.join(worse)}")
    return out


# -- output -------------------------------------------------------------------------------------------

def rule(noise: Noise | None) -> dict[str, Any]:
    """The rule of every comparison of the table, with the noise estimate it used."""
    return {"test": "welch", "scale": "log of each metric", "noise": noise_record(noise),
            "noise_applies_to": [m.key for m in registry.regressed() if m.timed], "interval": "95% per comparison",
            "multiplicity": "holm over every tested comparison of the table, both directions",
            "controls": "family-wise error rate of the verdicts over the table"}


def rule_line(noise: Noise | None) -> str:
    said = noise.text() if noise is not None else "none"
    return (f"Each change is new over old (ratio of geometric means) with its 95% interval (Welch's t on the mean "
            f"logs; throughput, TPOT and TTFT carry the between-start variance a side, since two runs are separate "
            f"server starts; noise estimate: {said}). Verdicts by Holm over every comparison of the table: at most "
            f"5% chance of any false verdict in it. Points with fewer than 2 runs a side are not tested.")


def render(console: Console, points: Sequence[PointChange], heading: Sequence[str], noise: Noise | None) -> None:
    """The heading (what differs between the runs), then one row per point and metric."""
    for line in heading:
        console.print(Text(line), highlight=False, soft_wrap=True)
    table = Table(title="change, new against old (95% interval)", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("point", overflow="fold", min_width=14)
    table.add_column("metric", no_wrap=True)
    table.add_column("old", justify="right", no_wrap=True)
    table.add_column("new", justify="right", no_wrap=True)
    table.add_column("change [95% interval]", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for pt in points:
        for i, c in enumerate(pt.changes):
            style = {REGRESSED: "red", IMPROVED: "green"}.get(c.verdict)
            table.add_row(escape(pt.id) if i == 0 else "", c.metric.row, _num(c.old), _num(c.new), c.text(),
                          f"[{style}]{c.verdict}[/{style}]" if style else c.verdict,
                          end_section=i == len(pt.changes) - 1)
    console.print(table)
    console.print(rule_line(noise), markup=False, highlight=False, soft_wrap=True)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def change_record(c: Change) -> dict[str, Any]:
    return {"old": c.old, "new": c.new, "ratio": c.ratio, "change_pct": c.change_pct,
            "interval": None if c.low is None else [c.low, c.high],
            "confidence": CONFIDENCE if c.low is not None else None,
            "verdict": c.verdict, "loss_at_least_pct": c.loss_pct}


def point_record(pt: PointChange) -> dict[str, Any]:
    return {"id": pt.id, "old_id": pt.old_id, "new_id": pt.new_id, "verdict": pt.verdict,
            "metrics": {c.metric.key: change_record(c) for c in pt.changes}}
