"""``search: fit`` (the default): each run at the crossing of one curve of attainment against the
rate, fitted to every run (``capacity.fit``); rates repeat, the run is the unit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama4spec.capacity import fit as cf

from llama4spec.capacity import fit_search as cfs
from llama4spec.capacity import probing as cap
from llama4spec.capacity.strategies.base import Strategy, register
from llama4spec.capacity.write_report import fit_runs


def add_run(search: cap.Search, rate: float, run: cap.Run, why: str) -> cap.Search:
    """The search with ``run`` added to the probe at ``rate`` (or a new probe, ``why``: why the
    search went there): a fitted search repeats rates whatever a per-rate verdict says."""
    probes = list(search.probes)
    for i, probe in enumerate(probes):
        if probe.rate == rate:
            probes[i] = cap.Probe(rate, (*probe.runs, run), probe.why)
            return cap.Search(search.settings, tuple(probes))
    return cap.Search(search.settings, (*probes, cap.Probe(float(rate), (run,), why[:200])))


@dataclass(frozen=True)
class FitSearch(Strategy):
    name = "fit"
    rank = 0
    reads = frozenset({"start_rate", "max_rate", "min_rate", "precision", "max_probes", "confidence"})
    precision = cf.PRECISION

    @property
    def fitted(self) -> cf.Settings:
        """The fit's settings: ``max_probes`` runs at most."""
        s = self.settings
        return cf.Settings(start=s.start_rate, target=self.target, precision=s.precision or cf.PRECISION,
                           confidence=s.confidence, max_runs=s.max_probes, cap=s.max_rate, floor=s.min_rate)

    def problems(self) -> list[str]:
        """The rates and probes as a bisecting search reads them (search.json records them so), and the
        fit's own precision, confidence and probe budget."""
        record = self.record
        return [*cap.rate_problems(record), *cap.probe_problems(record), *cf.fit_problems(self.fitted)]

    def move(self, search: cap.Search) -> tuple[float | None, str]:
        d = cfs.decide(self.fitted, fit_runs(search))
        return d.rate, d.reason

    def add(self, search: cap.Search, rate: float, run: cap.Run, why: str) -> cap.Search:
        return add_run(search, rate, run, why)

    def document(self, search: cap.Search) -> dict[str, Any]:
        """search.json's ``search: fit`` and ``fit``: the fitted answer after the runs so far (estimate,
        interval, shape, isotonic estimate, dispersion, the runs set aside as outliers and why) and what
        comes next."""
        runs = fit_runs(search)
        a, d = cf.answer(self.fitted, runs), cfs.decide(self.fitted, runs)
        f = a.fit
        return {"search": "fit", "fit": {
            "estimate": a.estimate, "interval": [a.low, a.high], "half_width": a.half_width,
            "confidence": a.confidence, "shape_fits": a.shape_fits, "shape": a.shape, "isotonic": a.isotonic,
            "isotonic_words": a.isotonic_words, "runs": a.runs, "binding": a.binding, "per_metric": a.per_metric,
            "outliers": [o.record() for o in a.outliers],
            "curve": None if f is None else {"b0": f.b0, "b1": f.b1, "center": f.center, "cov": list(f.cov),
                                             "dispersion": f.dispersion, "df": f.df},
            "next": {"rate": d.rate, "why": d.reason, "stop": d.stop}}}

    def stop(self, search: cap.Search) -> str | None:
        return cfs.decide(self.fitted, fit_runs(search)).stop

    def result(self, search: cap.Search) -> tuple[str, dict[str, Any]]:
        fitted = cf.answer(self.fitted, fit_runs(search))
        return f"      {cf.describe('request capacity', fitted)}", {
            "capacity_rps": fitted.estimate, "low_rps": fitted.low, "high_rps": fitted.high,
            "binding": fitted.binding, "shape_fits": fitted.shape_fits, "runs": fitted.runs}

    def plan_words(self) -> str:
        s = self.settings
        return (f"each run at the crossing of one curve fitted to every run, until the {s.confidence:.0%} "
                f"interval is within +-{s.stop_precision:.0%}; at most {s.max_probes} runs")

    def runs(self) -> tuple[int, int]:
        """MIN_FIT_RUNS runs at the least, max_probes at the most."""
        return cf.MIN_FIT_RUNS, self.settings.max_probes


register(FitSearch)
