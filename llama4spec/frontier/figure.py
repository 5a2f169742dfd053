"""The frontier as a PNG (matplotlib, Agg): each setting's tokens per device against per-user speed,
log-log, its nodes with their 95% intervals (off-frontier nodes hollow), each crossover a line with
its interval shaded. Like the sweep's plots, the series drawn are in the PNG's ``Series`` metadata."""

from __future__ import annotations

from pathlib import Path

from llama4spec.analysis.plots import pyplot, save
from llama4spec.stats.interval import interval
from llama4spec.frontier.build import Frontier

TITLE = "Frontier: tokens per device vs per-user speed"


def draw(f: Frontier, path: Path) -> list[str]:
    """Write the figure to ``path``; returns the series drawn."""
    fig, ax = pyplot().subplots(figsize=(6.4, 4.4))
    for c in f.curves:
        on = c.frontier
        line, = ax.plot([n.speed for n in on], [n.per_device for n in on], marker="o", label=c.name,
                        linestyle="-" if c.speculative else "--")
        for n in c.nodes:
            iv = interval([r / n.devices for r in n.runs])
            if iv.bounded:
                ax.errorbar([n.speed], [iv.median], yerr=[[iv.median - iv.low], [iv.high - iv.median]],
                            color=line.get_color(), capsize=3, fmt="none")
            if not n.on_frontier:
                ax.plot([n.speed], [n.median_per_device], marker="o", mfc="none", color=line.get_color())
    for v in f.comparisons:
        for x in v.crossovers:
            low, high = x.low or v.overlap[0], x.high or v.overlap[1]
            ax.axvspan(low, high, alpha=0.12, color="grey")
            ax.axvline(x.speed, color="grey", linestyle=":", label=f"crossover {v.candidate.name}: {x.speed:.3g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"per-user output tok/s (1000 / {'median' if f.curves and f.curves[0].tpot.startswith('median') else 'mean'} TPOT ms)")
    ax.set_ylabel(f"output tok/s per {f.device} (95% interval)")
    return save(fig, ax, path, TITLE.replace("device", f.device), grid="both")
