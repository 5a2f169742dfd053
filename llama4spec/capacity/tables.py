"""A capacity step's answer from its searches (pure), as a record (capacity.json), Markdown and a
terminal table: per server setting the request capacity in req/s and output tok/s with its
interval, what binds, any cliff, and the gain over no speculation with its interval."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from llama4spec.capacity import fit as cf

from llama4spec.capacity import fit_search as cfs
from llama4spec.capacity.answer import Capacity, capacity
from llama4spec.capacity.probing import NAMES, Search
from llama4spec.capacity.gain import (STARTS_DOMINATE, Between, Gain, describe, fitted_gain, gain,
                                               headline)

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


def _throughput_at(search: Search, rate: float | None) -> float | None:
    """The output throughput (tok/s) at ``rate`` from the runs' means per rate probed, interpolated in
    log rate between the two rates around it (the nearest one's beyond them)."""
    means = sorted((p.rate, m) for p in search.probes if (m := _throughput(search, p.rate)) is not None)
    if rate is None or not means:
        return None
    if rate <= means[0][0]:
        return means[0][1]
    for (x0, y0), (x1, y1) in zip(means, means[1:]):
        if rate <= x1:
            share = (np.log(rate) - np.log(x0)) / (np.log(x1) - np.log(x0))
            return float(y0 + share * (y1 - y0))
    return means[-1][1]


@dataclass(frozen=True)
class Fitted:
    """A fitted search's answer (``capacity_fit.answer``) and where its search stands (``decide``)."""

    answer: cf.Answer
    decision: cfs.Decision


def floor_bound(search: Search, f: Fitted) -> tuple[float, str] | None:
    """A fitted search stopped at its lowest rate, every run failing: that rate as an upper bound on the
    capacity where the runs there fail the target at the search's confidence (the one-sided
    Clopper-Pearson upper bound of their pooled attainment below it), with the words; else None."""
    from scipy import stats

    if f.decision.stop != cfs.FLOOR_STOP or not search.probes:
        return None
    s, lowest = search.settings, min(search.probes, key=lambda p: p.rate)
    n = sum(r.requests for r in lowest.runs)
    good = sum(round(r.attainment * r.requests) for r in lowest.runs)
    if n <= 0 or good >= n:
        return None
    upper = float(stats.beta.ppf(s.confidence, good + 1, n - good))
    if upper >= s.target:
        return None
    return lowest.rate, (f"the SLO failed at the lowest rate, {lowest.rate:g} req/s ({good} of {n} requests good; "
                         f"{s.confidence:.0%} upper bound {upper:.2f}, below the target {s.target:g}): the capacity "
                         f"is below it")


def _fitted_entry(name: str, search: Search, f: Fitted) -> dict[str, Any]:
    """capacity.json's entry for a fitted search: the crossing with its interval, what binds (the
    per-metric fits), the shape check and the isotonic estimate."""
    a, d = f.answer, f.decision
    fits = a.shape_fits and a.estimate is not None
    rate, low, high = (a.estimate, a.low, a.high) if fits else (None, None, None)
    notes = [] if a.shape_fits else [f"the logistic shape does not fit ({a.shape}); isotonic estimate "
                                     f"{a.isotonic_words}"]
    if a.shape_fits and a.estimate is None:
        notes.append(f"no fitted crossing; isotonic estimate {a.isotonic_words}")
    notes += [o.words() for o in a.outliers]
    bound = floor_bound(search, f)
    if bound is not None:  # failed at the lowest rate: bounded above there, whatever the fit
        rate, low, high = None, None, bound[0]
        notes.append(bound[1])
    said = f"; {bound[1]}" if bound is not None else ""
    done = d.rate is None
    if done and (why := cf.wide_words(a)):
        notes.append(why)
    return {"search": "fit", "rate": rate, "low": low, "high": high, "half_width": a.half_width if fits else None,
            "confidence": a.confidence, "binding": a.binding, "per_metric": a.per_metric, "done": done,
            "stopped": d.reason, "shape_fits": a.shape_fits, "shape": a.shape, "isotonic": a.isotonic,
            "isotonic_words": a.isotonic_words, "dispersion": a.fit.dispersion if a.fit is not None else None,
            "outliers": [o.record() for o in a.outliers],
            "probes": len(search.probes), "runs": a.runs, "error_bound": 1 - a.confidence, "notes": notes,
            "output_tps": [_throughput_at(search, low), _throughput_at(search, high)],
            "output_tps_at": _throughput_at(search, rate),
            "sentence": cf.describe(name, a) + said + ("" if done else f" (so far; {d.reason})")}


def analyse(searches: Mapping[str, Search], baseline: str | None, slo: str,
            missing: Mapping[str, str] | None = None, fitted: Mapping[str, Fitted] | None = None,
            between: Between | None = None) -> dict[str, Any]:
    """capacity.json: every setting's capacity, output throughput at its bounds, gain over
    ``baseline`` (a key of ``searches``) and the load generator's CPU time; the headline.
    ``fitted``: the fitted searches' answers (those settings take the fit's; the others a
    bisecting search's); ``between``: the between-start term their gains carry."""
    fitted = dict(fitted or {})
    between = between or Between(0.0, "none given")
    settings: dict[str, dict[str, Any]] = {}
    caps: dict[str, Capacity] = {}
    for name, s in searches.items():
        if name in fitted:
            settings[name] = _fitted_entry(name, s, fitted[name])
            continue
        c = caps[name] = capacity(s)
        settings[name] = {"search": "bisect", **asdict(c), "low": c.rate,
                          "output_tps": [_throughput(s, c.rate), _throughput(s, c.high)], "sentence": describe(name, c)}
    gains: dict[str, Gain] = {}
    if baseline in settings:
        for name in settings:
            if name == baseline:
                continue
            if name in fitted and baseline in fitted:
                high, base_low = settings[name]["high"], settings[baseline]["low"]
                gains[name] = (Gain(None, 0.0, high / base_low) if floor_bound(searches[name], fitted[name])
                               and base_low else fitted_gain(fitted[name].answer, fitted[baseline].answer, between))
            elif name in caps and baseline in caps:
                gains[name] = gain(caps[name], caps[baseline])
    for name, s in searches.items():
        g = gains.get(name)
        settings[name].update(gain=asdict(g) if g is not None else None, client_cpu_s=_cpu(s))
        if g is not None and g.starts_share is not None and g.starts_share > STARTS_DOMINATE:
            settings[name]["notes"] = [*settings[name]["notes"],
                                       f"the gain is wide because of starts ({g.starts_share:.0%} of its variance "
                                       f"is the between-start term): another start of each server would narrow it"]
    line = headline(gains, {n: s["binding"] for n, s in settings.items()}, baseline, slo) \
        if baseline in settings else None
    return {"kind": KIND, "version": 2, "slo": slo, "baseline": baseline, "headline": line, "settings": settings,
            "missing": dict(missing or {}),
            "between": {"sd": between.sd, "source": between.source} if fitted else None}


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
        tps, digits = s["output_tps"], (".4g" if s.get("search") == "fit" else "g")
        at = s.get("output_tps_at", tps[0])
        if s.get("search") == "fit" and not s["shape_fits"]:
            where = f"isotonic {s['isotonic']:.4g}" if s["isotonic"] is not None \
                else f"isotonic {s['isotonic_words'].split(':')[0]}"
            capacity_cell = f"- ({where}; the logistic shape does not fit)"
        elif s.get("search") == "fit":
            rate = "-" if s["rate"] is None else format(s["rate"], digits)
            low = "open" if s["low"] is None else format(s["low"], digits)
            high = "open" if s["high"] is None else format(s["high"], digits)
            capacity_cell = f"{rate} [{low}, {high}]"
        else:
            rate = "-" if s["rate"] is None else format(s["rate"], digits)
            capacity_cell = f"{rate} {_interval(s.get('low', s['rate']), s['high'], digits)}"
        out.append([name, capacity_cell,
                    "-" if at is None else f"{at:.0f} " + (
                        _interval(tps[0], tps[1], ".0f") if s.get("search") != "fit" else
                        "[" + ", ".join("open" if v is None else f"{v:.0f}" for v in tps) + "]"),
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
    lines += [f"SLO: {record['slo']}. {method_words(record)}", ""]
    lines += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in rows(record)]
    lines.append("")
    for s in record["settings"].values():
        lines.append(f"- {s['sentence']}; error bound {s['error_bound']:.2g}")
        lines += [f"  - {note}" for note in s["notes"] if s.get("search") == "fit" and note not in s["sentence"]]
    for name, why in record.get("missing", {}).items():
        lines.append(f"- {name}: not measured ({why})")
    lines += [f"- warning: {w}" for w in record.get("warnings") or []]
    lines.append("")
    lines += demand_lines(record)
    for name, image in images.items():
        lines += [f"![latency against request throughput, {name}]({image})", ""]
    return "\n".join(lines)


def demand_lines(record: Mapping[str, Any]) -> list[str]:
    """report.md's section on a load and a price (``capacity.demand``), when the step gave either."""
    d = record.get("demand")
    if not d:
        return []
    head = (f"## For {d['load']:g} req/s" if d.get("load") is not None else "## Price") + \
        (f" (at {d['price']:g} a {d['device']}-hour)" if d.get("price") is not None else "")
    return [head, "", *(f"- {line}" for line in d["lines"]), "",
            f"Servers are ceil(load / capacity), their interval from the capacity's; the {d['device']}s saved take "
            f"the extremes of both settings' intervals; a CPU server counts as one device.", ""]


def method_words(record: Mapping[str, Any]) -> str:
    """How the capacities and gains were found: the fitted curve's crossing, or the per-rate
    verdicts, with the between-start term's size and source where a fitted gain carries it."""
    kinds = {s.get("search", "bisect") for s in record["settings"].values()}
    words = []
    if "fit" in kinds:
        b = record.get("between") or {}
        words.append("The request capacity is the rate at which one logistic curve of attainment against log rate, "
                     "fitted to every probe run of the server (quasi-binomial, the run as the unit), crosses the "
                     "target; its interval is Fieller's with the runs' dispersion. The gain is the ratio of the "
                     "crossings; its interval adds both capacities' log standard errors and a between-start term "
                     f"for each server (log sd {b.get('sd', 0):.3g}: {b.get('source', 'none given')}).")
    if "bisect" in kinds:
        words.append("A bisecting search's capacity is the largest request rate (open loop, Poisson arrivals) at "
                     "which the SLO was shown to hold; its interval runs to the lowest rate shown to fail, and its "
                     "gain's interval takes the extremes of both intervals.")
    return " ".join(words)


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
    for line in (record.get("demand") or {}).get("lines", []):
        console.print(escape(line), highlight=False, soft_wrap=True)
