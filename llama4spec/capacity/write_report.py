"""A capacity step's report from the records of its searches: every search.json read back (as
input: ``capacity.from_json`` validates it, the SLO it recorded is checked here), the probes'
records for the plots; written to the step's directory (report.md, capacity.json, one
latency-throughput PNG per setting) and printed. The run writes it from its plan; ``report`` and
report.html analyse the same records again from plan.json (``from_plan_record``)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from rich.console import Console
from rich.markup import escape

from llama4spec.capacity import fit as cf

from llama4spec.capacity import fit_search as cfs
from llama4spec.capacity.plot import capacity_fits
from llama4spec.errors import UserError
from llama4spec.figures import SLO_MEDIANS
from llama4spec.files import json_or_none, plain, write_atomic, write_json
from llama4spec.results import bench as bench_record
from llama4spec.capacity import bands, records
from llama4spec.capacity.blocks import markdown as blocks_markdown
from llama4spec.analysis import plots
from llama4spec.capacity import tables as capacity_report
from llama4spec.capacity.gain import Between
from llama4spec.capacity.answer import from_json
from llama4spec.capacity.probing import METRICS, Search
from llama4spec.runbook.rundir import read_config

# The between-start term of a gain whose settings' hardware says nothing (no config.yaml to read).
NO_BETWEEN = Between(0.0, "none: no setting's config.yaml names a hardware noise prior")

PROBES = "probes"  # a search step's probe directories, under its own
SEARCH = "search.json"
FIT_FIGURE = "capacity-fit.png"  # the fitted searches' curves, beside report.md
FIX = "run the capacity step again (--resume), or remove the file to leave that setting out"


def probe_dir(step_dir: Path, rate: float) -> Path:
    """Where a search step keeps the runs of its probe at ``rate``."""
    return step_dir / PROBES / f"rate={rate:g}"


def slo_basis(slo: records.Slo) -> dict[str, Any]:
    """The SLO's basis as search.json recorded it (name, attainment, relative_to, multipliers,
    medians), the keys it holds (read through its model: input)."""
    out: dict[str, Any] = {k: plain(v, 200) for k in ("name", "relative_to") if (v := getattr(slo, k)) is not None}
    if slo.attainment is not None:
        out["attainment"] = slo.attainment
    out.update({k: dict(v) for k in ("multipliers", "medians") if (v := getattr(slo, k)) is not None})
    return out


def read_search(path: Path) -> tuple[Search | None, dict[str, Any], str | None]:
    """(search, its recorded SLO {thresholds, slo, fit}, None) or (None, {}, why not: one line naming
    the file, the field and the fix when it is there but not a search this tool wrote)."""
    data, problem = json_or_none(path)
    if data is None:
        return None, {}, problem or "no search.json (the search did not run)"
    try:
        model = records.check(data, plain(str(path)))
        search = from_json(data)
    except UserError as err:
        found = "; ".join(p.removeprefix(f"{SEARCH}: ") for p in err.problems)
        return None, {}, found if found.startswith(plain(str(path))) else f"{plain(str(path))}: {found}; {FIX}"
    return search, {"thresholds": dict(model.thresholds), "slo": slo_basis(model.slo), "fit": model.search == "fit"}, None


def probe_runs(step_dir: Path, search: Search, metrics: list[str], percent: float) -> list[tuple[float, dict]]:
    """Each recorded run of the search's probes: (request throughput, metric -> P``percent`` ms)."""
    out = []
    for probe in search.probes:
        record = bench_record.read(probe_dir(step_dir, probe.rate) / "record.json")
        for run in (record.runs or [record]) if record is not None else []:
            x = run.figure("request_throughput")
            if x is not None:
                out.append((x, {m: run.percentile_ms(m, percent) for m in metrics}))
    return out


@dataclass(frozen=True)
class Setting:
    """One search step of a capacity step: its id, the setting in words, its directory."""

    id: str
    name: str
    dir: Path


@dataclass
class Found:
    """A capacity step's searches read back, and their analysis (capacity.json)."""

    record: dict[str, Any]
    searches: dict[str, Search] = field(default_factory=dict)  # setting -> its search
    slos: dict[str, dict[str, Any]] = field(default_factory=dict)  # setting -> {thresholds, slo}
    settings: list[Setting] = field(default_factory=list)


def medians_of(record) -> dict[str, float] | None:
    """A bench record's median TTFT, TPOT and E2E latency (ms): what an SLO relative to it multiplies."""
    if record is None:
        return None
    return {m: v for m, key in SLO_MEDIANS.items() if (v := record.figure(key)) is not None}


def reference_warnings(basis: Mapping[str, Any], medians: Mapping[str, float] | None) -> list[str]:
    """A line when the medians a relative SLO was resolved from (search.json's) are not those of
    the bench step's record as it is now (re-measured, or no record left)."""
    step = basis.get("relative_to")
    if not step:
        return []
    if medians is None:
        return [f"the SLO's step {step} has no counted record now; its medians are those search.json recorded"]
    moved = [f"{m} {v:.4g} ms recorded, {medians.get(m)} now" for m, v in (basis.get("medians") or {}).items()
             if not (medians.get(m) is not None and math.isclose(v, medians[m], rel_tol=1e-9))]
    return [f"the medians of step {step} differ from those the SLO was resolved from ({', '.join(moved)}): the "
            f"searches measured against the recorded thresholds"] if moved else []


def between_of(settings: list[Setting]) -> Between:
    """The between-start term of the settings' gains: the hardware noise prior their config.yaml
    records (``runbook.noise_prior.hardware_prior``; a GPU's is provisional, zero and said so)."""
    from llama4spec.runbook.noise_prior import hardware_prior

    for s in settings:
        cfg = read_config(s.dir / "config.yaml")
        if isinstance(cfg, dict) and isinstance(cfg.get("hardware"), dict):
            noise = hardware_prior(cfg["hardware"])
            why = f" [provisional: {noise.provisional}]" if noise.provisional else ""
            return Between(noise.between.sd, f"{noise.between.source} (on {noise.between.df:g} df){why}")
    return NO_BETWEEN


def analyse(settings: list[Setting], baseline: str | None, failures: Mapping[str, str] | None = None,
            strict: bool = False, reference: Any = None, between: Between | None = None,
            load: float | None = None, price: float | None = None) -> Found:
    """Read every setting's search.json and analyse them; ``baseline``: the search step of no
    speculation; ``reference``: the medians (``medians_of``) of the bench step a relative SLO
    names, as its record is now. A search.json that is there but not one (cut short, altered) is
    a setting not measured, or with ``strict`` (``report``) a UserError naming the file and the fix.
    A search recorded as fitted (``search: fit``) is refitted from its runs; ``between``: the
    between-start term its gain carries (default: ``between_of`` the settings); ``load``, ``price``:
    the step's (``capacity.demand``)."""
    between = between or between_of(settings)
    searches: dict[str, Search] = {}
    missing: dict[str, str] = {}
    recorded: dict[str, dict[str, Any]] = {}
    for s in settings:
        search, slo, why = read_search(s.dir / SEARCH)
        if search is None and strict and os.path.lexists(s.dir / SEARCH):
            raise UserError(plain(why or f"{s.dir / SEARCH}: not a capacity search; {FIX}", 1000))
        if search is None or not search.probes:
            missing[s.name] = (failures or {}).get(s.id) or why or "no probe measured"
            continue
        searches[s.name], recorded[s.name] = search, slo
    first = next(iter(recorded.values()), {"thresholds": {}, "slo": {}})
    slo = capacity_report.slo_words(first["thresholds"], first["slo"])
    name = next((s.name for s in settings if s.id == baseline), None)
    fitted = {n: fitted_answer(search) for n, search in searches.items() if recorded[n].get("fit")}
    record = capacity_report.analyse(searches, name, slo, missing, fitted, between)
    record["thresholds"] = first["thresholds"]
    record["resolved"] = first["slo"]
    record["warnings"] = reference_warnings(first["slo"], reference)
    _demand(record, settings, load, price)
    return Found(record, searches, recorded, settings)


def _demand(record: dict[str, Any], settings: list[Setting], load: float | None, price: float | None) -> None:
    """The load's servers and devices and the price at each capacity into ``record`` (and its headline)."""
    from llama4spec.capacity.demand import clause, demand

    configs = {s.name: c for s in settings if s.name in record["settings"]
               and isinstance(c := read_config(s.dir / "config.yaml"), dict)}
    found = demand(record, configs, load, price)
    if found is None:
        return
    record["demand"] = found
    said = clause(record, found)
    if said and record.get("headline"):
        record["headline"] = f"{record['headline']}; {said}"


def write(found: Found, files: Mapping[str, Path], console: Console) -> str:
    """report.md, capacity.json and each setting's plot into ``files`` (the capacity step's
    artifacts), the table printed; returns report.md's text."""
    images = {}
    for s in found.settings:
        if s.name not in found.searches:
            continue
        search, path = found.searches[s.name], files[f"latency-{s.id}"]
        percent = round(100 * search.settings.target, 6)
        thresholds = found.slos[s.name]["thresholds"]
        runs = probe_runs(s.dir, search, list(thresholds), percent)
        plots.latency_vs_throughput(s.name, runs, thresholds, percent, found.record["settings"][s.name]["rate"], path)
        images[s.name] = path.name
    banded = found.record.get("input_bands")
    text = capacity_report.markdown(found.record, images) + "\n".join(bands.markdown(banded)) + \
        "\n".join(blocks_markdown(found.record.get("blocks"))) + fitted_section(found, files["report"].parent)
    write_atomic(files["report"], text)
    write_json(files["analysis"], records.checked_capacity(found.record, plain(str(files["analysis"]))))
    capacity_report.render(console, found.record)
    if banded and banded.get("routing"):
        console.print(escape(banded["routing"]), highlight=False, soft_wrap=True)
    return text


def fit_runs(search: Search) -> list[cf.Run]:
    """Every run of a search's probes, the run as the unit (with its per-metric shares when recorded)."""
    return [cf.Run(p.rate, r.attainment * r.requests, r.requests, r.per_metric) for p in search.probes for r in p.runs]


def fitted_settings(search: Search) -> cf.Settings:
    """A fitted search's settings from those its search.json recorded (the probe budget is
    ``max_probes`` runs)."""
    s = search.settings
    return cf.Settings(start=min(max(s.start, cf.MIN_RATE), s.cap), target=s.target,
                       precision=s.precision if 0 < s.precision < 1 else cf.PRECISION, confidence=s.confidence,
                       max_runs=max(s.max_probes, cf.MIN_FIT_RUNS), cap=s.cap,
                       floor=s.floor if s.floor < s.cap else cf.MIN_RATE)


def fitted_answer(search: Search) -> capacity_report.Fitted:
    """A fitted search refitted from its runs: its answer and where it stands."""
    settings, runs = fitted_settings(search), fit_runs(search)
    return capacity_report.Fitted(cf.answer(settings, runs), cfs.decide(settings, runs))


def fitted_section(found: Found, where: Path) -> str:
    """Every setting's runs against the rate, with the fitted curves where a search was fitted, drawn
    into ``where / FIT_FIGURE``, as a markdown section; "" without a setting measured."""
    drawn = {}
    for name, search in found.searches.items():
        runs = fit_runs(search)
        if found.slos.get(name, {}).get("fit"):
            drawn[name] = (runs, fitted_answer(search).answer)
        else:
            s = search.settings
            drawn[name] = (runs, cf.answer(cf.Settings(start=s.start, target=s.target, confidence=s.confidence), runs))
    if not drawn:
        return ""
    target = next(iter(found.searches.values())).settings.target
    capacity_fits(drawn, target, where / FIT_FIGURE)
    lines = ["", "## Attainment against the request rate", "",
             "Every run as a point; the logistic curve fitted to a setting's runs with its pointwise "
             f"{next(iter(drawn.values()))[1].confidence:.0%} band, or its isotonic curve (dashed) where the logistic "
             "shape does not fit; the target as a dashed line and each capacity's interval on it.", ""]
    lines += [f"- {cf.describe(name, a)}" for name, (_, a) in drawn.items()]
    return "\n".join([*lines, "", f"![attainment against rate]({FIT_FIGURE})", ""])


def from_plan_record(step: Mapping[str, Any], kinds: Mapping[str, str],
                     runs: list[Path]) -> tuple[list[Setting], str | None]:
    """A capacity step's settings and baseline from its plan.json entry (read back: input). Its
    searches are the search steps among its needs; each lies in the first of ``runs`` (the run
    directory, then its groups) that holds its search.json. A name not recorded (or given twice)
    is the step id."""
    record = step.get("capacity") if isinstance(step.get("capacity"), dict) else {}
    names = record.get("names") if isinstance(record.get("names"), dict) else {}
    band_of = bands_of(step)  # a banded step names each setting once per band, one in blocks once per block
    blocked = bool(pairs_of(step))
    out: list[Setting] = []
    for sid in step.get("needs") or []:
        if kinds.get(sid) != "search":
            continue
        name = names.get(sid)
        name = plain(name, 200) if isinstance(name, str) and name.strip() else sid
        if not blocked and any(s.name == name and band_of.get(s.id) == band_of.get(sid) for s in out):
            name = sid
        where = next((r / sid for r in runs if (r / sid / SEARCH).exists()), runs[0] / sid)
        out.append(Setting(sid, name, where))
    baseline = record.get("baseline")
    return out, baseline if any(s.id == baseline for s in out) else None


def bands_of(step: Mapping[str, Any]) -> dict[str, str]:
    """The band of each search step a banded capacity step's plan.json entry recorded (read back:
    input; empty for a step not banded or a record that is not one)."""
    record = step.get("capacity") if isinstance(step.get("capacity"), dict) else {}
    found = record.get("bands")
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str) and len(v) <= 100}


def pairs_of(step: Mapping[str, Any]) -> dict[str, str]:
    """The pairs of searches (a setting's -> its block's no speculation's) a capacity step in
    back-to-back blocks recorded in plan.json (read back: input; empty for a step not in blocks)."""
    record = step.get("capacity") if isinstance(step.get("capacity"), dict) else {}
    found = record.get("pairs")
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def demand_of(step: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The load and price a capacity step's plan.json entry recorded (each None where absent or out of
    the bounds its key has)."""
    from llama4spec.files import number
    from llama4spec.frontier.load import MAX_LOAD
    from llama4spec.frontier.price import MAX_PRICE

    record = step.get("capacity") if isinstance(step.get("capacity"), dict) else {}
    load = number(record.get("load"), 0, MAX_LOAD)
    return (load if load else None), number(record.get("price"), 0, MAX_PRICE)
