"""The break-even map in words: its record (JSON), its Markdown table, a Rich table, and the plot
(speedup against acceptance length, a line per lookahead, break-even marked, the real draft as points)."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

from llama4spec.breakeven.map_fit import CROSSES, NEVER, BreakEven, BreakEvenMap, Curve, Range
from llama4spec.stats.noise import noise_record
from llama4spec.files import write_atomic

TITLE = "Break-even map: speedup against acceptance length"


def to_record(m: BreakEvenMap, blocks: int = 0) -> dict[str, Any]:
    """The map as plain data (breakeven.json); ``blocks``: measured in that many back-to-back blocks."""
    record = dataclasses.asdict(m)
    record["noise"] = noise_record(m.noise)
    return {"method": method(m, blocks), **record}


def method(m: BreakEvenMap, blocks: int = 0) -> str:
    if blocks:
        return (f"speedup: each server started in {blocks} back-to-back blocks, each beside a fresh server without "
                f"speculation, runs alternating in pairs; a block's speedup the ratio of its two sides' geometric "
                f"means of output throughput, a point's the geometric mean of its blocks' with a paired t interval on "
                f"their own spread (blocks - 1 df; the between-start variance is in that spread, no prior), "
                f"{m.confidence:.0%} intervals; fit: log speedup non-decreasing in acceptance length (weighted "
                f"pool-adjacent-violators), linear between grid points; break-even and predictions: percentile "
                f"intervals of {m.draws} parametric bootstrap draws of each point's blocks (t on their df); "
                f"acceptance lengths from vLLM's counters")
    return (f"speedup: ratio of geometric means of output throughput against no speculation at the same concurrency, "
            f"Welch's t on log throughput plus the between-start variance per server (each server here is one "
            f"start; noise estimate: {m.noise.text()}), "
            f"{m.confidence:.0%} intervals; fit: log speedup non-decreasing in acceptance length (weighted "
            f"pool-adjacent-violators), linear between grid points; break-even and predictions: percentile intervals "
            f"of {m.draws} parametric bootstrap draws over servers; acceptance lengths from vLLM's counters")


def breakeven_text(b: BreakEven) -> str:
    low = f"< {b.first:.2f}" if b.low is None else f"{b.low:.2f}"
    high = f"> {b.last:.2f}" if b.high is None else f"{b.high:.2f}"
    if b.state == CROSSES:
        return f"{b.value:.2f} [{low}, {high}]"
    where = f"below {b.first:.2f}" if b.state != NEVER else f"above {b.last:.2f}"
    return f"{b.state} ({where}) [{low}, {high}]"


def range_text(r: Range | None, digits: int = 2) -> str:
    if r is None or r.value is None:
        return "-"
    low = "-inf" if r.low is None else f"{r.low:.{digits}f}"  # None: beyond the grid (break-even outside it)
    high = "inf" if r.high is None else f"{r.high:.{digits}f}"
    return f"{r.value:.{digits}f} [{low}, {high}]"


def rows(m: BreakEvenMap) -> list[list[str]]:
    """One row per (lookahead, concurrency): the grid's speedups, break-even, cost of k = 0."""
    out = []
    for c in m.curves:
        grid = ", ".join(f"{p.length:.2f}: {p.speedup.value:.2f}" for p in c.points)
        k0 = "-" if c.k0_cost is None else f"speedup {range_text(c.k0_cost)}: {1 - c.k0_cost.value:.0%} of throughput lost"
        out.append([str(c.lookahead), str(c.concurrency), grid, breakeven_text(c.breakeven), k0])
    return out


def placement_rows(m: BreakEvenMap) -> list[list[str]]:
    out = []
    for c in m.curves:
        for p in c.placements:
            check = ("- (no measured speedup in the record)" if p.agrees is None
                     else f"{'agrees' if p.agrees else 'DISAGREES'} ({range_text(p.difference)})")
            out.append([p.label + (" (given)" if p.given else ""), str(c.lookahead), str(c.concurrency),
                        f"{p.acceptance_length:.2f}", range_text(p.measured), range_text(p.predicted),
                        range_text(p.headroom), p.limit, check])
    return out


GRID_HEADER = ["k", "concurrency", "acceptance length: speedup", "break-even acceptance length",
               "cost of k=0 (length 1.0 vs none)"]
PLACE_HEADER = ["real draft", "k", "concurrency", "acceptance length", "measured speedup", "map predicts",
                "headroom above break-even", "limited by", "self-check (measured / predicted)"]


NO_CHECK = ("self-check: not made: no draft placed here has a measured speedup (a record given without one is placed "
            "at its acceptance length only)")


def _md_table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def verdict(m: BreakEvenMap) -> str | None:
    """The self-check over every placement (None: no real draft was placed)."""
    places = [p for c in m.curves for p in c.placements if p.agrees is not None]
    if not places:
        return None
    bad = [f"{p.label}" for p in places if not p.agrees]
    if not bad:
        return (f"self-check: passed: the real draft's measured speedup agrees with the map's prediction at its "
                f"acceptance length at all {len(places)} placements (each ratio's {m.confidence:.0%} interval holds 1)")
    return f"self-check: FAILED at {len(bad)} of {len(places)} placements: {', '.join(bad)}"


def markdown(m: BreakEvenMap, image: str | None, blocks: int = 0) -> str:
    text = f"# {TITLE}\n\n" + _md_table(GRID_HEADER, rows(m))
    if placement_rows(m):
        text += "\n## The real draft on the map\n\n" + _md_table(PLACE_HEADER, placement_rows(m))
        text += f"\n{verdict(m) or NO_CHECK}\n"
    if image:
        text += f"\n![{TITLE}]({image})\n"
    text += "\n" + "".join(f"- {n}\n" for n in m.notes)
    text += f"\nmethod: {method(m, blocks)}\n"
    return text


def render(console, m: BreakEvenMap) -> None:
    from rich.table import Table

    t = Table(title=TITLE)
    for h in GRID_HEADER:
        t.add_column(h)
    for r in rows(m):
        t.add_row(*r)
    console.print(t)
    if placement_rows(m):
        p = Table(title="the real draft on the map")
        for h in PLACE_HEADER:
            p.add_column(h)
        for r in placement_rows(m):
            p.add_row(*r)
        console.print(p)
        console.print(verdict(m) or NO_CHECK, highlight=False, markup=False, soft_wrap=True)
    for n in m.notes:
        console.print(f"note: {n}", highlight=False, markup=False, soft_wrap=True)


def plot(m: BreakEvenMap, path: Path) -> list[str]:
    """Speedup against acceptance length: a panel per concurrency, a line per lookahead (the monotone
    fit, with each grid point's interval), break-even marked, the real draft as points; returns the
    series' labels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    concurrencies = sorted({c.concurrency for c in m.curves})
    fig, axes = plt.subplots(1, max(1, len(concurrencies)), figsize=(5.0 * max(1, len(concurrencies)), 4.0),
                             squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    lookaheads = sorted({c.lookahead for c in m.curves})
    labels: list[str] = []
    for ax, conc in zip(axes[0], concurrencies):
        for curve in (c for c in m.curves if c.concurrency == conc):
            _draw_curve(ax, curve, colours[lookaheads.index(curve.lookahead) % len(colours)])
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xlabel("acceptance length (vLLM's counters)")
        ax.set_ylabel("speedup over no speculation")
        ax.set_title(f"concurrency {conc}")
        ax.grid(True, alpha=0.3)
        _, names = ax.get_legend_handles_labels()
        if names:
            ax.legend(fontsize=7)
        labels += [f"c={conc} {n}" for n in names]
    fig.suptitle(TITLE)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=100, metadata={"Title": TITLE, "Series": json.dumps(labels)})
    plt.close(fig)
    write_atomic(path, image.getvalue())
    return labels


def _draw_curve(ax, curve: Curve, colour: str) -> None:
    xs = [p.length for p in curve.points]
    ys = [p.speedup.value for p in curve.points]
    err = [[max(0.0, y - p.speedup.low) for y, p in zip(ys, curve.points)],
           [max(0.0, p.speedup.high - y) for y, p in zip(ys, curve.points)]]
    ax.errorbar(xs, ys, yerr=err, fmt="o", color=colour, capsize=3, markersize=4, label=f"k={curve.lookahead} synthetic")
    ax.plot(xs, [p.fitted for p in curve.points], color=colour, linewidth=1.2)
    b = curve.breakeven
    if b.value is not None:
        ax.axvline(b.value, color=colour, linestyle=":", linewidth=1)
        ax.plot([b.value], [1.0], marker="x", color=colour, markersize=9, label=f"k={curve.lookahead} break-even")
        if b.low is not None and b.high is not None:
            ax.hlines(1.0, b.low, b.high, color=colour, linewidth=3, alpha=0.4)
    for p in curve.placements:
        if p.measured is None:  # a record given without a speedup: where the map puts it
            ax.plot([p.acceptance_length], [p.predicted.value], marker="D", color=colour, markersize=8,
                    markerfacecolor="none", linestyle="none", label=f"k={curve.lookahead} given draft ({p.label})")
            continue
        ax.errorbar([p.acceptance_length], [p.measured.value],
                    yerr=[[max(0.0, p.measured.value - p.measured.low)], [max(0.0, p.measured.high - p.measured.value)]],
                    fmt="*", color=colour, markersize=11, markeredgecolor="black", capsize=3,
                    label=f"k={curve.lookahead} {'given' if p.given else 'real'} draft ({p.label})")
