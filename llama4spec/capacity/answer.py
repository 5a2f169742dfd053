"""The answer a capacity search gives (``capacity``: the largest rate shown to hold, the lowest shown
to fail, cliffs, undecided rates) and the search as its ``search.json`` keeps it (``to_json``) and
read back (``from_json``): its settings, every probe with its runs and verdict, what comes next and
the answer so far (pure, no I/O)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

import numpy as np

from llama4spec.capacity.probing import (KIND, MAX_PROBES, MAX_RATE, Probe, Run, Search, Settings, bounds, move,
                                                 number_ok, run_problems, settings_problems, standing)
from llama4spec.capacity.verdict import FAILS, HOLDS, UNDECIDED, verdict
from llama4spec.stats.interval import CONFIDENCE
from llama4spec.errors import UserError
from llama4spec.files import shown



@dataclass(frozen=True)
class Capacity:
    """One server's request capacity: the largest rate at which the SLO was shown to hold."""

    rate: float | None  # L (None: it held at no rate probed)
    high: float | None  # U, the lowest rate shown to fail (None: none failed)
    output_throughput: float | None  # output tokens per second, the mean of the runs at L
    binding: str | None  # at U (at L when nothing failed)
    done: bool  # the search is over: L and U are verdicts (while it runs, they may be leanings)
    stopped: str  # why the search ended, or where it goes next
    cliff: tuple[float, float] | None = None  # (a rate that failed, a higher rate at which the SLO held)
    undecided: tuple[float, ...] = ()  # rates inside [L, U] left undecided
    probes: int = 0
    runs: int = 0
    alpha: float = 1 - CONFIDENCE  # each verdict's error rate
    error_bound: float = 0.0  # the whole interval's: Bonferroni over the verdicts (alpha x verdicts)
    notes: list[str] = field(default_factory=list)


def capacity(search: Search) -> Capacity:
    """The answer a search gives so far (final once ``done``)."""
    s, nxt, b = search.settings, move(search), bounds(search)
    by_rate = {p.rate: p for p in search.probes}
    throughputs = [r.output_throughput for r in (by_rate[b.low].runs if b.low is not None else ())
                   if r.output_throughput is not None]
    where = by_rate.get(b.high if b.high is not None else b.low)  # type: ignore[arg-type]
    failed, held = b.rates(FAILS), b.rates(HOLDS)
    cliff = next(((f, max(h for h in held if h > f)) for f in failed if any(h > f for h in held)), None)
    undecided = tuple(r for r in b.rates(UNDECIDED) if b.low is not None and b.high is not None and b.low < r < b.high)
    notes = []
    if cliff:
        notes.append(f"cliff: the SLO failed at {cliff[0]:g} req/s but held at {cliff[1]:g} req/s; the capacity "
                     f"given is the one below the first failure")
    if undecided:
        notes.append(f"undecided at {', '.join(f'{r:g}' for r in undecided)} req/s: the interval spans them")
    alpha = 1 - s.confidence
    decided = len(failed) + len(held)
    return Capacity(b.low, b.high, float(np.mean(throughputs)) if throughputs else None,
                    verdict(s, where).binding if where else None, nxt.rate is None, nxt.reason, cliff, undecided,
                    len(search.probes), sum(len(p.runs) for p in search.probes), alpha, min(1.0, alpha * decided),
                    notes)


def to_json(search: Search) -> dict[str, Any]:
    """The search as a ``search.json``: its settings, every probe (rate, runs, verdict, attainment
    with its interval, binding metric, why the search went there), what comes next, the answer."""
    probes = []
    for probe in search.probes:
        v = verdict(search.settings, probe)
        probes.append({"rate": probe.rate, "why": probe.why, "verdict": standing(search.settings, probe),
                       "attainment": v.attainment, "interval": None if v.low is None else [v.low, v.high],
                       "level": v.level, "p_holds": v.p_holds, "p_fails": v.p_fails, "binding": v.binding,
                       "runs": [asdict(r) for r in probe.runs]})
    nxt = move(search)
    return {"kind": KIND, "version": 1, "settings": asdict(search.settings), "probes": probes,
            "next": {"rate": nxt.rate, "why": nxt.reason}, "capacity": asdict(capacity(search))}


def from_json(data: Any, settings: Settings | None = None) -> Search:
    """A search read back from ``to_json``'s output (its probes and runs; the verdicts are
    recomputed), under ``settings`` when given (a resumed search's own), else the recorded ones.
    UserError naming the first thing that cannot be one."""
    if not isinstance(data, Mapping) or data.get("kind") != KIND:
        raise UserError(f"search.json: not a capacity search (kind {KIND!r} expected)")
    if settings is None:
        recorded = data.get("settings")
        if not isinstance(recorded, Mapping) or not set(recorded) <= set(Settings.__dataclass_fields__) \
                or "start" not in recorded:
            raise UserError("search.json: its settings are missing or hold unknown keys")
        settings = Settings(**dict(recorded))
    problems = settings_problems(settings)
    if problems:
        raise UserError(*(f"search.json: {p}" for p in problems))
    probes = data.get("probes")
    if not isinstance(probes, list) or len(probes) > MAX_PROBES:
        raise UserError(f"search.json: 'probes' must be a list of at most {MAX_PROBES}")
    kept: list[Probe] = []
    for i, probe in enumerate(probes, 1):
        rate, runs, why = (probe.get(k) if isinstance(probe, Mapping) else None for k in ("rate", "runs", "why"))
        if not (number_ok(rate) and 0 < rate <= MAX_RATE) or any(p.rate == rate for p in kept):
            raise UserError(f"search.json: probe {i} has no usable rate of its own ({shown(rate)})")
        if not isinstance(runs, list) or not runs or len(runs) > MAX_PROBES:  # a fitted search repeats rates
            raise UserError(f"search.json: probe {i} needs a list of 1 to {MAX_PROBES} runs")
        read = []
        for run in runs:
            if not isinstance(run, Mapping) or not set(run) <= set(Run.__dataclass_fields__) or "attainment" not in run \
                    or "requests" not in run:
                raise UserError(f"search.json: probe {i} holds a run that is not one")
            one = Run(**dict(run))
            if run_problems(one):
                raise UserError(f"search.json: probe {i}: {run_problems(one)[0]}")
            read.append(one)
        kept.append(Probe(float(rate), tuple(read), why[:200] if isinstance(why, str) else ""))
    return Search(settings, tuple(kept))
