"""PNG plots of a sweep (matplotlib, Agg backend: no display needed).

Each function writes one file and returns the labels of the series it drew; the same labels
are stored in the PNG's text metadata under ``Series`` (JSON), so a reader can tell what a
picture holds without looking at it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from llama4spec.figures import Figure, Plot
from llama4spec.files import write_atomic
from llama4spec.stats.point import Point
from llama4spec.stats.speedup_results import Analysis

SERIES_KEY = "Series"


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, ax, path: Path, title: str, grid: str = "major") -> list[str]:
    """Legend, title and grid (``grid``: which ticks), then the PNG written whole to ``path`` with its
    title and the series drawn in its metadata; returns the series."""
    _, labels = ax.get_legend_handles_labels()
    if labels:
        ax.legend(fontsize=8)
    ax.set_title(title)
    ax.grid(True, alpha=0.3, which=grid)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=100, metadata={"Title": title, SERIES_KEY: json.dumps(labels)})
    pyplot().close(fig)
    write_atomic(path, image.getvalue())
    return labels


def acceptance_by_position(points: list[Point], path: Path) -> list[str]:
    """P(position i accepted) per draft and lookahead, pooled over every concurrency (fixed
    lookaheads only: under a schedule later positions are drafted at some batch sizes only)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    pooled: dict[tuple[str, int], tuple[int, list[int]]] = {}
    for p in points:
        if p.speculative and p.num_drafts and not p.scheduled:
            drafts, counts = pooled.get((p.draft, p.lookahead), (0, [0] * p.lookahead))
            per_pos = (list(p.accepted_per_pos) + [0] * p.lookahead)[:p.lookahead]
            pooled[(p.draft, p.lookahead)] = (drafts + p.num_drafts, [a + b for a, b in zip(counts, per_pos)])
    for (draft, k), (drafts, counts) in sorted(pooled.items()):
        ax.plot(range(1, k + 1), [c / drafts for c in counts], marker="o", label=f"{draft} k={k}")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("draft position")
    ax.set_ylabel("acceptance rate")
    ax.set_ylim(0, 1.05)
    return save(fig, ax, path, "Acceptance by position")


def _errors(values: list[tuple[float, float | None, float | None]]) -> list[list[float]] | None:
    """matplotlib's yerr (below, above) from (median, low, high); None when no value has an interval."""
    if all(low is None for _, low, _ in values):
        return None
    return [[max(0.0, y - low) if low is not None else 0.0 for y, low, _ in values],
            [max(0.0, high - y) if high is not None else 0.0 for y, _, high in values]]


def figure_vs_concurrency(points: list[Point], figure: Figure, plot: Plot, path: Path) -> list[str]:
    """A sweep figure (medians; output throughput, say) against concurrency, one line per lookahead
    (and no speculation), with the 95% intervals as error bars."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    lines: dict[str, list[tuple[int, float, float | None, float | None]]] = {}
    several = len({p.temperature for p in points}) > 1
    for p in sorted(points, key=lambda p: (p.temperature, p.speculative, p.draft, p.lookahead or 0, p.concurrency)):
        value = p.value(figure.key)
        if value is not None and not p.category:
            iv = p.interval(figure.key)
            name = f"{p.name} T={p.temperature:g}" if several else p.name
            lines.setdefault(name, []).append((p.concurrency, value, iv.low, iv.high))
    for name, xy in lines.items():
        ax.errorbar([x for x, *_ in xy], [y for _, y, *_ in xy], yerr=_errors([v[1:] for v in xy]), marker="o",
                    label=name, capsize=3, linestyle="--" if name.startswith("no speculation") else "-")
    ax.set_xscale("log", base=2)
    ticks = sorted({x for xy in lines.values() for x, *_ in xy})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_xlabel("max concurrency")
    ax.set_ylabel(plot.axis)
    return save(fig, ax, path, plot.title)


def speedup_measured_vs_predicted(analysis: Analysis, path: Path) -> list[str]:
    """Measured speedup (markers with their Welch intervals, at each comparison's Holm level) against
    the fitted model (lines) by lookahead, per concurrency."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    n = 0
    for a in analysis.at:
        if a.category:
            continue
        for draft, fit in a.fits.items():
            measured = [(r.point.lookahead, r.speedup, r.speedup_interval) for r in a.rows
                        if r.point.draft == draft and r.speedup]
            if not measured:
                continue
            colour = colours[n % len(colours)]
            n += 1
            tag = (f"c={a.concurrency}" + (f" T={a.temperature:g}" if a.temperature_swept else "")
                   + (f" {draft}" if len(a.fits) > 1 else ""))
            yerr = _errors([(s, iv.low if iv else None, iv.high if iv else None) for _, s, iv in measured])
            ax.errorbar([k for k, *_ in measured], [s for _, s, _ in measured], yerr=yerr, color=colour, fmt="o",
                        capsize=3, label=f"measured {tag}")
            if fit.curve:
                ax.plot([k for k, _ in fit.curve], [s for _, s in fit.curve], color=colour, label=f"predicted {tag}")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("lookahead (speculative tokens)")
    ax.set_ylabel("speedup over no speculation")
    return save(fig, ax, path, "Speedup: measured vs predicted")


def latency_vs_throughput(name: str, runs: list[tuple[float, dict[str, float]]], thresholds: dict[str, float],
                          percent: float, capacity: float | None, path: Path) -> list[str]:
    """One server setting's probes: each run's P``percent`` latency of every metric the SLO bounds
    (ms, log scale) against its request throughput (req/s), the SLO's thresholds as dashed lines in
    the same colour, the request capacity as a vertical line. ``runs``: (request throughput,
    metric -> ms)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = {"ttft": "TTFT", "tpot": "TPOT", "e2el": "E2E"}
    for n, (metric, limit) in enumerate(thresholds.items()):
        colour = colours[n % len(colours)]
        xy = sorted((x, q[metric]) for x, q in runs if q.get(metric) is not None and q[metric] > 0)
        if xy:
            ax.plot([x for x, _ in xy], [y for _, y in xy], marker="o", color=colour,
                    label=f"P{percent:g} {names.get(metric, metric)}")
        ax.axhline(limit, color=colour, linestyle="--", linewidth=1, label=f"SLO {names.get(metric, metric)} {limit:.4g} ms")
    if capacity is not None:
        ax.axvline(capacity, color="grey", linewidth=0.8, label=f"request capacity {capacity:g} req/s")
    ax.set_yscale("log")
    ax.set_xlabel("request throughput (req/s)")
    ax.set_ylabel("latency (ms)")
    return save(fig, ax, path, f"Latency vs throughput: {name}")


def acceptance_per_request(points: list[Point], path: Path) -> list[str]:
    """The distribution of acceptance length per request, one box per setting (draft and lookahead),
    its requests pooled over every concurrency and run (a server without per-request counters
    gives none)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    by_setting: dict[str, list[float]] = {}
    for p in points:
        lengths = [r.acceptance_length for r in p.requests if r.acceptance_length is not None]
        if p.speculative and lengths:
            by_setting.setdefault(p.name, []).extend(lengths)
    names = sorted(by_setting)
    if names:
        parts = ax.boxplot([by_setting[n] for n in names], showmeans=True)
        ax.set_xticks(range(1, len(names) + 1), [f"{n}\n({len(by_setting[n])} requests)" for n in names], fontsize=8)
        parts["boxes"][0].set_label("requests: median, quartiles, whiskers 1.5 IQR; triangle: mean")
    else:
        ax.text(0.5, 0.5, "no per-request acceptance recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel("acceptance length (tokens per step)")
    labels = save(fig, ax, path, "Acceptance length per request")
    return names if names else labels
