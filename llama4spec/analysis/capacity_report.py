"""A capacity step's answer from its searches (pure), as a record (capacity.json), Markdown and a
terminal table: per server setting the request capacity in req/s and output tok/s with its
interval, what binds, any cliff, and the gain over no speculation with its interval."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Mapping

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from llama4spec.analysis.capacity_search import NAMES, Capacity, Search, capacity
from llama4spec.analysis.capacity_gain import describe, gain, headline

KIND = "llama4spec.capacity"


def slo_words(thresholds: Mapping[str, float], basis: Mapping[str, Any]) -> str:
    """The SLO as measured: ``slo=interactive`` for a named one with its own thresholds, else the
    thresholds themselves (and whose medians they multiply)."""
    limits = " and ".join(f"{NAMES.get(m, m)} <= {v:.4g} ms" for m, v in thresholds.items())
    share = f"{float(basis.get('attainment', 0.95)):.0%}"
    if basis.get("relative_to"):
        factors = ", ".join(f"{f:g}x" for f in (basis.get("multipliers") or {}).values())
        return f"{limits} for {share} of requests ({factors} the medians of {basis['relative_to']})"
    if basis.get("name") and basis["name"] != "none":
        return f"slo={basis['name']} ({limits} for {share} of requests)"
    return f"{limits} for {share} of requests"


def slo_lines(thresholds: Mapping[str, float], basis: Mapping[str, Any]) -> list[str]:
    """The SLO in sentences for the page: its thresholds and share, and where they came from (an
    SLO option, or multiples of a bench step's medians)."""
    share = f"{float(basis.get('attainment', 0.95)):.0%}"
    limits = ", ".join(f"{NAMES.get(m, m)} <= {v:.4g} ms" for m, v in thresholds.items()) or "no threshold recorded"
    lines = [f"a request is good when {limits}; the SLO holds when {share} of the requests sent are good"]
    if basis.get("relative_to"):
        medians, factors = basis.get("medians") or {}, basis.get("multipliers") or {}
        parts = [f"{NAMES.get(m, m)} {factors[m]:g}x its median {medians[m]:.4g} ms" if m in medians
                 else f"{NAMES.get(m, m)} {factors[m]:g}x its median" for m in factors]
        lines.append(f"resolved from the medians measured by step {basis['relative_to']}: {', '.join(parts)}")
    elif basis.get("name") and basis["name"] != "none":
        lines.append(f"the thresholds of slo={basis['name']}")
    return lines


def page_rows(record: Mapping[str, Any]) -> list[list[str]]:
    """``rows`` with each setting's notes (a cliff, undecided rates, a search not finished) after
    what binds."""
    out = []
    for row, s in zip(rows(record), record["settings"].values()):
        notes = list(s["notes"]) + ([] if s["done"] else [f"not finished: {s['stopped']}"])
        out.append([*row[:4], "; ".join(notes) or "-", *row[4:]])
    return out


PAGE_HEADER = ["setting", "request capacity req/s [low, high]", "output tok/s [at low, at high]", "binds",
               "cliff, notes", "gain over no speculation [interval]", "probes / runs", "client CPU s"]


def _throughput(search: Search, rate: float | None) -> float | None:
    """The mean output throughput (tok/s) of the runs at ``rate``."""
    runs = [r.output_throughput for p in search.probes if p.rate == rate for r in p.runs
            if r.output_throughput is not None]
    return float(np.mean(runs)) if runs else None


def _cpu(search: Search) -> float | None:
    values = [r.client_cpu_s for p in search.probes for r in p.runs if r.client_cpu_s is not None]
    return float(sum(values)) if values else None


def analyse(searches: Mapping[str, Search], baseline: str | None, slo: str,
            missing: Mapping[str, str] | None = None) -> dict[str, Any]:
    """capacity.json: every setting's capacity, output throughput at its bounds, gain over
    ``baseline`` (a key of ``searches``) and the load generator's CPU time; the headline."""
    caps: dict[str, Capacity] = {name: capacity(s) for name, s in searches.items()}
    settings = {}
    for name, s in searches.items():
        c = caps[name]
        g = gain(c, caps[baseline]) if baseline in caps and name != baseline else None
        settings[name] = {**asdict(c), "output_tps": [_throughput(s, c.rate), _throughput(s, c.high)],
                          "gain": asdict(g) if g is not None else None, "client_cpu_s": _cpu(s),
                          "sentence": describe(name, c)}
    line = headline(caps, baseline, slo) if baseline in caps else None
    return {"kind": KIND, "version": 1, "slo": slo, "baseline": baseline, "headline": line, "settings": settings,
            "missing": dict(missing or {})}


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _interval(low: float | None, high: float | None, digits: str = "g") -> str:
    lo = "-" if low is None else format(low, digits)
    hi = "no upper bound" if high is None else format(high, digits)
    return f"[{lo}, {hi}]"


def rows(record: Mapping[str, Any]) -> list[list[str]]:
    """The table's rows: setting, capacity [L, U] req/s, output tok/s [at L, at U], binding, gain, runs, CPU."""
    out = []
    for name, s in record["settings"].items():
        g = s.get("gain")
        gain_text = "-" if g is None else (f"{g['ratio']:.2f}x " if g["ratio"] is not None else "? ") + \
            _interval(g["low"], g["high"], ".2f")
        tps = s["output_tps"]
        out.append([name, f"{_rate(s['rate'])} {_interval(s['rate'], s['high'])}",
                    "-" if tps[0] is None else f"{tps[0]:.0f} {_interval(tps[0], tps[1], '.0f')}",
                    NAMES.get(s["binding"], "-") if s["binding"] else "-", gain_text,
                    f"{s['probes']} / {s['runs']}", "-" if s["client_cpu_s"] is None else f"{s['client_cpu_s']:.1f}"])
    return out


HEADER = ["setting", "request capacity (req/s)", "output tok/s", "binds", "gain", "probes / runs", "client CPU s"]


def markdown(record: Mapping[str, Any], images: Mapping[str, str]) -> str:
    """report.md: the headline, the SLO, the table, each setting in words (cliffs, undecided rates),
    the plots; ``images``: setting -> PNG file name."""
    lines = ["# Request capacity", ""]
    if record.get("headline"):
        lines += [f"**{record['headline']}.**", ""]
    lines += [f"SLO: {record['slo']}. The request capacity is the largest request rate (open loop, Poisson "
              f"arrivals) at which the SLO was shown to hold; its interval runs to the lowest rate shown to fail. "
              f"The gain's interval takes the extremes of both intervals.", ""]
    lines += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in rows(record)]
    lines.append("")
    for s in record["settings"].values():
        lines.append(f"- {s['sentence']}; error bound {s['error_bound']:.2g}")
    for name, why in record.get("missing", {}).items():
        lines.append(f"- {name}: not measured ({why})")
    lines += [f"- warning: {w}" for w in record.get("warnings") or []]
    lines.append("")
    for name, image in images.items():
        lines += [f"![latency against request throughput, {name}]({image})", ""]
    return "\n".join(lines)


def render(console: Console, record: Mapping[str, Any]) -> None:
    """The table and the headline on the terminal."""
    table = Table(title=f"Request capacity under {escape(record['slo'])}", title_justify="left")
    for h in HEADER:
        table.add_column(h)
    for r in rows(record):
        table.add_row(*(escape(c) for c in r))
    console.print(table)
    if record.get("headline"):
        console.print(escape(record["headline"]), highlight=False, soft_wrap=True)
    for s in record["settings"].values():
        for note in s["notes"]:
            console.print(f"note: {escape(note)}", highlight=False, soft_wrap=True)
    for warning in record.get("warnings") or []:
        console.print(f"warning: {escape(warning)}", highlight=False, soft_wrap=True)
