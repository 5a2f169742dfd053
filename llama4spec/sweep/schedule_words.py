"""A derived lookahead schedule in words: its verdict against the recommended fixed setting, its
bands and the override that deploys it, and the note on what concurrency stands for; with the
interval's text the sweep's tables share (``812.3 [790.1, 830.2]``)."""

from __future__ import annotations

from llama4spec.stats.compare import compare
from llama4spec.stats.interval import Interval
from llama4spec.stats.point import SCHEDULED, runs, starts_of as _starts
from llama4spec.stats.speedup_results import AtConcurrency, Row
from llama4spec.sweep.schedule_fit import Schedule

SCHEDULE_NOTE = ("client concurrency approximates the server's running batch size; batch sizes above the last "
                 "range carry its k forward (vLLM)")


def interval_text(iv: Interval | None, fmt: str = ".1f", suffix: str = "") -> str:
    """``812.3 [790.1, 830.2]``; the median alone without an interval."""
    if iv is None or iv.median is None:
        return "-"
    if not iv.bounded:
        return f"{iv.median:{fmt}}{suffix}"
    return f"{iv.median:{fmt}}{suffix} [{iv.low:{fmt}}, {iv.high:{fmt}}]"


def schedule_verdict(a: AtConcurrency, r: Row) -> str:
    """The derived schedule against the recommended fixed setting at one concurrency: compared by
    Welch's t on their own (95% for this one comparison: the schedule is verified, not chosen)."""
    base = r.point.draft.removesuffix(SCHEDULED)
    fixed = [x.point for x in a.rows if x.point.draft == base and x.point.output_throughput is not None]
    pick = a.choices.get(base)
    best = pick.point if pick is not None else None
    if best is None and a.baseline is not None and a.baseline.output_throughput is not None:
        best = a.baseline
    best = best if best is not None else max(fixed, key=lambda p: p.output_throughput, default=None)
    speedup = "" if r.speedup is None else f", {r.speedup:.2f}x"
    mine = r.point.interval("output_throughput")
    head = f"lookahead schedule: {interval_text(mine)} tok/s{speedup}"
    if best is None:
        return f"{head}; no fixed setting measured here to compare with"
    name = f"k={best.lookahead}" if best.speculative else "no speculation"
    what = f"the recommended fixed setting ({name}, {interval_text(best.interval('output_throughput'))} tok/s)"
    c = compare({r.point.id: runs(r.point), best.id: runs(best)}, noise=a.noise,
                starts=_starts([r.point, best]))[(r.point.id, best.id)]
    if c.interval is None:
        if r.point.output_throughput >= best.output_throughput:
            return f"{head}: at least as good as {what} by the medians; one sample each, so nothing is decided"
        slower = 100 * (1 - r.point.output_throughput / best.output_throughput)
        return f"{head}: {slower:.0f}% below {what}; one sample each, so no interval says whether that is noise"
    if c.decided:
        return f"{head}: {c.verdict} than {what} ({c.text()}, Welch)"
    if r.point.output_throughput >= best.output_throughput:
        return f"{head}: at least as good as {what} by the medians, undecided ({c.text()}; {c.settle(short=True)})"
    slower = 100 * (1 - r.point.output_throughput / best.output_throughput)
    return (f"{head}: {slower:.0f}% below {what} by the medians, undecided ({c.text()}; "
            f"{c.settle(short=True)})")


def schedule_lines(schedule: Schedule) -> list[str]:
    """A derived schedule in sentences: its bands, then the override that deploys it."""
    lines = [f"lookahead schedule for {schedule.draft}:"]
    for b in schedule.bands:
        at = ", ".join(str(c) for c in b.concurrencies)
        lines.append(f"  batch sizes {b.first}-{b.last}: k={b.k}" + (" (no speculation)" if b.k == 0 else "")
                     + f"  (measured at concurrency {at}{undecided(b.undecided)})")
    lines.append(f"  deploy it with: {schedule.override()}")
    return lines


def undecided(concurrencies: list[int]) -> str:
    """'; undecided at 4': the band's concurrencies whose recommendation is undecided."""
    return f"; undecided at {', '.join(map(str, concurrencies))}" if concurrencies else ""
