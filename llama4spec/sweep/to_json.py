"""A sweep's analysis as JSON-able data (``to_record``: the sweep's ``.json`` and the summary); its
tables and text: ``sweep.tables``."""

from __future__ import annotations

from typing import Any

from llama4spec import figures as registry
from llama4spec.analysis import band_report
from llama4spec.stats.point import Point
from llama4spec.stats.speedup_model import temperature_findings
from llama4spec.stats.speedup_results import Analysis, AtConcurrency
from llama4spec.stats.noise import noise_record
from llama4spec.sweep.schedule_fit import derive_all
from llama4spec.stats.comparison import Comparison
from llama4spec.stats.interval import CONFIDENCE, Interval
from llama4spec.sweep.schedule_words import SCHEDULE_NOTE
from llama4spec.sweep.tables import attributions, choice_text, model_against_recommendation


def to_record(analysis: Analysis) -> dict[str, Any]:
    """The analysis as JSON-able data (the sweep's ``.json`` and the summary)."""
    return {
        "verdict": analysis.verdict(),
        "pays_up_to": analysis.pays_up_to,
        "stops_paying_at": analysis.stops_paying_at,
        "temperatures": [t for t, _ in analysis.by_temperature] or [analysis.reference_temperature],
        "temperature_findings": temperature_findings(analysis),
        "tail_attribution": [{"point": p.id, "draft": p.draft, "lookahead": p.lookahead, "concurrency": p.concurrency,
                              **att.to_record()} for p, att in attributions(analysis)[0]],
        "rule": {**RULE, "noise": noise_record(analysis.noise)},
        "schedules": _schedules(analysis),
        "concurrency": [_at_concurrency(a) for a in analysis.at],
        **({"input_bands": bands} if (bands := band_report.record(analysis)) else {}),
    }


def _schedules(analysis: Analysis) -> list[dict[str, Any]]:
    """Each draft's lookahead schedule derived from the points."""
    return [
        {"draft": s.draft, "schedule": s.ranges, "lookahead": s.lookahead, "override": s.override(),
         "bands": [{"first": b.first, "last": b.last, "k": b.k, "concurrencies": b.concurrencies,
                    "undecided": b.undecided} for b in s.bands],
         "from_points": s.from_points, "note": SCHEDULE_NOTE}
        for s in derive_all(analysis)
    ]


def _at_concurrency(a: AtConcurrency) -> dict[str, Any]:
    """One concurrency (and temperature, category) of the analysis."""
    return {
        "concurrency": a.concurrency,
        "temperature": a.temperature,
        "category": a.category,
        **({"input_band": a.band} if a.band else {}),
        "best": a.best.id if a.best else None,
        "best_lookahead": (a.best.lookahead if a.best and a.best.speculative else None),
        "best_decided": a.pick.decided if a.pick is not None and a.pick.point is not None else None,
        "speculation": a.status,
        "best_by_acceptance": a.best_by_acceptance.id if a.best_by_acceptance else None,
        "baseline": a.baseline.id if a.baseline else None,
        "baseline_output_throughput": a.baseline.output_throughput if a.baseline else None,
        "fastest": a.fastest.id if a.fastest else None,
        "baseline_intervals": _intervals(a.baseline) if a.baseline else None,
        "choices": {draft: {"recommended": pick.point.id if pick.point else None, "label": pick.label,
                            "decided": pick.decided, "undecided_against": list(pick.undecided),
                            "sentence": choice_text(a, draft)}
                    for draft, pick in a.choices.items()},
        "comparisons": _comparisons(a),
        "without_speculation": [
            {"id": r.point.id, "repeats": r.point.repeats, "against": a.baseline.id,
             "output_throughput": r.point.output_throughput, "speedup": r.speedup,
             "speedup_interval": _ratio_interval(r.speedup_interval), "verdict": r.verdict,
             "comparison": _comparison(r.comparison) if r.comparison is not None else None}
            for r in a.others
        ],
        **({"sequential": dict(zip(("min_repeats", "max_repeats", "confidence"), a.rule))} if a.rule else {}),
        "rows": _rows(a),
        "model": _models(a),
    }


def _rows(a: AtConcurrency) -> list[dict[str, Any]]:
    """Its points, each against no speculation."""
    return [
        {"id": r.point.id, "draft": r.point.draft, "lookahead": r.point.lookahead,
         "category": r.point.category, "repeats": r.point.repeats,
         **{f.key: r.point.value(f.key) for f in registry.sweep()},
         "acceptance_rate_per_position": list(r.point.rates), "speedup": r.speedup,
         "speedup_interval": _ratio_interval(r.speedup_interval),
         "verdict": r.verdict,
         "comparison": _comparison(r.comparison) if r.comparison is not None else None,
         "intervals": _intervals(r.point),
         "bound": r.bound, "efficiency": r.efficiency, "predicted_speedup": r.predicted}
        for r in a.rows
    ]


def _models(a: AtConcurrency) -> dict[str, Any]:
    """Each draft's cost model fitted to its points."""
    return {
        draft: {"draft_cost": f.draft_cost, "rates": list(f.rates),
                "draft_cost_interval": ([f.cost.c_low, f.cost.c_high]
                                        if f.cost and f.cost.c_low is not None else None),
                "fixed_overhead_c0": f.cost.c0 if f.cost else None,
                "form": f.cost.model if f.cost else None,
                "aic": dict(f.cost.aic) if f.cost else {},
                "residuals": {str(k): v for k, v in f.cost.residuals.items()} if f.cost else {},
                "predicted": [{"lookahead": k, "speedup": s} for k, s in f.curve],
                "predicted_best_lookahead": f.best[0] if f.best else None,
                "against_recommendation": model_against_recommendation(a, f)}
        for draft, f in a.fits.items()
    }


RULE = {"test": "welch", "scale": "log output throughput", "multiplicity": "holm",
        "family": "every ordered pair of fixed settings at one concurrency", "confidence": CONFIDENCE,
        "controls": "family-wise error rate of the verdicts at each concurrency",
        "recommendation": "highest median among the settings no other is declared faster than; undecided unless "
                          "declared faster than every other"}


def _interval(iv: Interval | None) -> dict[str, Any] | None:
    if iv is None:
        return None
    return {"median": iv.median, "low": iv.low, "high": iv.high, "n": iv.n, "method": iv.method}


def _ratio_interval(iv: Interval | None) -> dict[str, Any] | None:
    if iv is None:
        return None
    def bound(x: float) -> float | None:  # a bound beyond the record's (a tiny Holm level on a wide spread): null
        return x if 0 <= x <= 1e12 else None

    return {"ratio": iv.ratio, "low": bound(iv.low), "high": bound(iv.high), "confidence": iv.confidence, "df": iv.df,
            "method": iv.method}


def _comparison(c: Comparison) -> dict[str, Any]:
    return {"first": c.first, "second": c.second, "verdict": c.verdict, "ratio": c.ratio,
            "interval": _ratio_interval(c.interval), "method": c.method, "level": c.level,
            "hypotheses": c.hypotheses, "runs_to_settle": c.runs_to_settle, "needs_start": c.needs_start,
            "settle": c.settle(), "noise": noise_record(c.noise), "margin": c.margin,
            **({"basis": c.basis} if c.basis else {})}


def _comparisons(a: AtConcurrency) -> list[dict[str, Any]]:
    """Every pair of fixed settings at the concurrency once, in the order they were compared."""
    seen: set[frozenset[str]] = set()
    out = []
    for (first, second), c in a.comparisons.items():
        if frozenset((first, second)) not in seen:
            seen.add(frozenset((first, second)))
            out.append(_comparison(c))
    return out


def _intervals(p: Point) -> dict[str, Any]:
    """Each figure's median and 95% interval over the point's repeats, and the samples themselves."""
    return {f.key: {**_interval(p.interval(f.key)), "samples": list(p.samples.get(f.key, ()))}
            for f in registry.sweep()}
