"""A frontier in words and tables: the CSV of the curves (``frontier.csv``), the Markdown section of
a sweep's report, the one sentence at the top of the report page, its record for the step's JSON."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from llama4spec.frontier.build import Frontier
from llama4spec.frontier.compare import AtSpeed, Crossover, Versus
from llama4spec.frontier.curve import TPOT_WORDS
from llama4spec.frontier.price import per_million

HEADER = ("setting", "point", "concurrency", "devices", "tpot_statistic", "tpot_ms", "per_user_tok_s",
          "output_tok_s", "output_tok_s_per_device", "output_tok_s_per_concurrency", "on_frontier", "runs",
          "price_per_million_tokens")


def csv_text(f: Frontier) -> str:
    """One row per measured node (medians over its runs); the last column empty without a price."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(HEADER)
    for c in f.curves:
        for n in c.nodes:
            w.writerow([c.name, n.id, n.concurrency, n.devices, c.tpot, f"{n.tpot_ms:.6g}", f"{n.speed:.6g}",
                        f"{n.median_per_device * n.devices:.6g}", f"{n.median_per_device:.6g}", f"{n.pareto_x:.6g}",
                        str(n.on_frontier).lower(), len(n.runs),
                        "" if f.price is None else f"{per_million(f.price, n.median_per_device):.6g}"])
    return out.getvalue()


def _iv(a: AtSpeed) -> str:
    if a.interval is None:
        return f"{a.ratio:.2f}x (fewer than 2 runs on a side: no interval)"
    return f"{a.ratio:.2f}x [{a.interval.low:.2f}, {a.interval.high:.2f}]"


def _speed(s: float | None) -> str:
    return "-" if s is None else f"{s:.3g}"


def crossing_text(v: Versus) -> str:
    """Where speculation stops paying, with its interval, or that it does not cross in the measured range."""
    if not v.crossovers:
        low, high = v.overlap or (0.0, 0.0)
        return f"no crossover in the measured range ({low:.3g}-{high:.3g} tok/s per user)"
    return "; ".join(_crossing(x) for x in v.crossovers)


def _crossing(x: Crossover) -> str:
    side = "below" if x.pays_above else "above"
    low = f"{x.low:.3g}" if x.low is not None else "open (the slowest speed measured)"
    high = f"{x.high:.3g}" if x.high is not None else "open (the fastest speed measured)"
    return f"speculation stops paying {side} {x.speed:.3g} tok/s per user [{low}, {high}]"


def pick(v: Versus) -> AtSpeed | None:
    """The speed a sentence names: the decided faster one with the highest interval low, else the highest ratio."""
    faster = [a for a in v.at if a.verdict == "faster" and a.interval is not None]
    if faster:
        return max(faster, key=lambda a: a.interval.low)
    return max(v.at, key=lambda a: a.ratio, default=None)


def sentence(v: Versus, f: Frontier) -> str | None:
    """The answer in one sentence: at a per-user speed, the ratio of tokens per device with its interval
    and verdict, the crossover, and with a price what a million tokens cost with and without the draft."""
    a = pick(v)
    if a is None:
        return None
    verdict = "undecided" if a.verdict == "undecided" else a.verdict
    text = (f"at {a.speed:.3g} tok/s per user, {v.candidate.name} gives {_iv(a)} the tokens per {f.device} of "
            f"{v.baseline.name} ({verdict}); {crossing_text(v)}")
    if f.price is not None:
        text += (f"; {per_million(f.price, a.candidate):.3g} instead of {per_million(f.price, a.baseline):.3g} per "
                 f"million output tokens at {f.price:g} a {f.device}-hour")
    return text


def lead(f: Frontier) -> str | None:
    """The sweep's one sentence: its best candidate's (decided faster with the highest low, else the highest ratio)."""
    def rank(v: Versus) -> tuple:
        a = pick(v)
        return (0, 0.0) if a is None else (a.verdict == "faster", a.interval.low if a.verdict == "faster" else a.ratio)

    best = max(f.comparisons, key=rank, default=None)
    return sentence(best, f) if best is not None else None


def method(f: Frontier) -> str:
    tpot = TPOT_WORDS[f.curves[0].tpot] if f.curves else TPOT_WORDS["median_tpot_ms"]
    return (f"Each setting's output throughput per {f.device} (its server's tensor x pipeline x data parallel "
            f"size; a CPU server counts as one) against its per-user speed, 1000 / {tpot} in ms, over its "
            f"concurrencies; a node another beats on both axes is off the frontier. Between neighbouring nodes "
            f"a curve is linear in log speed and log throughput. At every measured speed of either curve that "
            f"both reach, the ratio of geometric means with Welch's interval and the sweep's between-start term, "
            f"Holm over a candidate's speeds at {1 - (f.comparisons[0].confidence if f.comparisons else 0.95):.0%}; "
            f"a crossover's interval is the speeds around it whose 95% interval holds 1. The per-user speed is "
            f"taken as measured.")


def table(v: Versus, f: Frontier) -> list[str]:
    head = ["per-user tok/s", f"{v.candidate.name} tok/s/{f.device}", f"{v.baseline.name} tok/s/{f.device}",
            "ratio", "verdict"] + ([f"price/M with", "price/M without"] if f.price is not None else [])
    rows = [[_speed(a.speed), f"{a.candidate:.4g}", f"{a.baseline:.4g}", _iv(a), a.verdict]
            + ([f"{per_million(f.price, a.candidate):.4g}", f"{per_million(f.price, a.baseline):.4g}"]
               if f.price is not None else []) for a in v.at]
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in rows)]


def markdown(f: Frontier, image: str | None = "frontier.png") -> str:
    """The report's frontier section."""
    lines = ["", "## Frontier: tokens per " + f.device + " against per-user speed", ""]
    if f.drawn:
        lines += [method(f), ""]
        lines += [f"![frontier]({image})", ""] if image else []
        top = lead(f)
        lines += [f"**{top}**", ""] if top else []
        for v in f.comparisons:
            lines += [f"### {v.candidate.name} against {v.baseline.name}", "", *table(v, f), "", crossing_text(v), ""]
    lines += [f"- {note}" for note in f.notes]
    return "\n".join(lines) + "\n"


def record(f: Frontier) -> dict[str, Any]:
    """The frontier's comparisons for the step's JSON."""
    return {"device": f.device, "price": f.price, "notes": list(f.notes), "comparisons": [{
        "candidate": v.candidate.name, "baseline": v.baseline.name, "crossing": crossing_text(v),
        "at": [{"speed": a.speed, "ratio": a.ratio, "verdict": a.verdict,
                "low": _finite(a.interval.low if a.interval else None),
                "high": _finite(a.interval.high if a.interval else None)}
               for a in v.at]} for v in f.comparisons]}


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None
