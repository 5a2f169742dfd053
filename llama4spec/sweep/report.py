"""A sweep's report: its points' records analysed and written into its directory (report.md,
sweep.json, sweep.csv, the plots), by the run (``run_report``), by ``llama4spec report`` from the
records alone over every run directory given (``merge_part``), and its section of report.html
(``page_part``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from rich.console import Console
from rich.markup import escape

from llama4spec import figures as registry
from llama4spec.engine.secrets import redact
from llama4spec.files import csv_text, number, plain, write_atomic, write_json
from llama4spec.runbook import colocation as groups
from llama4spec.runbook.measured import measured_in_plan
from llama4spec.runbook.noise_prior import check_recorded, of_sweep
from llama4spec.runbook.rundir import Measured, csv_rows, is_step_id, not_run
from llama4spec.sweep.budget_stop import STOPPED, stop_note
from llama4spec.runbook.spec import MergeRead, PageRead
from llama4spec.runbook.steps import traits_of
from llama4spec.sweep import frontier_part, prefix_part
from llama4spec.sweep.planned import AUTO_DESIGN, INTERLEAVED, design_of
from llama4spec.sweep.merge_designs import design_warnings
from llama4spec.sweep.sweep_records import SweepRecord
from llama4spec.records.io import checked
from llama4spec.console import say
from llama4spec.frontier import words as frontier_words
from llama4spec.analysis import band_report, plots
from llama4spec.sweep import tables as render, to_json as sweep_json
from llama4spec.analysis.bands import analyse_points as analyse
from llama4spec.stats.point import Point
from llama4spec.stats.speedup_results import Analysis
from llama4spec.stats.checks import margin_problem
from llama4spec.stats.equivalence import MARGIN
from llama4spec.analysis.points import points as sweep_points

MAX_SHOWN = 200  # server starts named in the design's sentence
NESTED = ("blocks", "starts")  # the design's records of its server starts: their scalars and their order
MAX_ORDER = 10_000  # serve steps kept of a nested record's order (the sentence names MAX_SHOWN of them)


def design_lines(design: dict[str, Any] | None) -> list[str]:
    """The design in sentences (the dry run and the report), and async scheduling where it was pinned."""
    pinned = (design or {}).get("async_scheduling")
    unused = (design or {}).get("unused")
    return (_design_words(design) + ([f"warning: {plain(unused, 500)}"] if isinstance(unused, str) else [])
            + _starts_words(design) + ([plain(pinned, 500)] if isinstance(pinned, str) else []))


def _starts_words(design: dict[str, Any] | None) -> list[str]:
    starts = (design or {}).get("starts")
    if not isinstance(starts, dict) or not isinstance(starts.get("order"), list):
        return []
    order = ", ".join(plain(str(sid), 200) for sid in starts["order"][:MAX_SHOWN])
    more = len(starts["order"]) - MAX_SHOWN
    return [f"starts: each setting's server is started {plain(str(starts.get('starts')), 10)} times, in rounds of a "
            f"random order (order_seed {plain(str(starts.get('order_seed')), 20)}; every setting once a round), so "
            f"the between-start noise is estimated from the sweep's own runs; no larger lookahead is skipped as "
            f"dominated. Order: {order}" + (f" and {more} more" if more > 0 else "")]


def _design_words(design: dict[str, Any] | None) -> list[str]:
    if design and design.get("asked") == AUTO_DESIGN and design.get("design") != INTERLEAVED:
        why = design.get("auto") or design.get("fallback")
        return [f"design: sequential (auto: {plain(str(why), 300)})"] if why else []
    if not design or design.get("asked") not in (INTERLEAVED, AUTO_DESIGN):
        return []
    if design.get("design") != INTERLEAVED:
        return [f"design: sequential (interleaved was asked for, but {design.get('fallback')})"]
    gap = design.get("gap_s")
    gap = f"{number(gap, 0, 600):g}" if number(gap, 0, 600) is not None else "2"
    if isinstance(design.get("blocks"), dict):
        words = _blocks_words(design, gap)
        if design.get("asked") == AUTO_DESIGN:
            words[0] = words[0].replace("design: back-to-back blocks:", "design: back-to-back blocks (auto: no "
                                        "speculation and a candidate fit side by side on the node's GPUs):", 1)
        return words
    return [f"design: interleaved: no speculation stays up beside each candidate on disjoint devices and their runs "
            f"alternate, each at least {gap} s after the other server's last request; each "
            f"speedup is the paired t interval of the mean log ratio of back-to-back runs, with the between-start "
            f"term (interleaving cancels drift, not a server start's offset); the device is "
            f"{design.get('devices', 'a fixed factor')} (swap_devices: true swaps them)"]


def _blocks_words(design: dict[str, Any], gap: str) -> list[str]:
    """Back-to-back blocks (``design: interleaved`` with ``starts: J``) in sentences."""
    b = design["blocks"]
    j, k = plain(str(b.get("blocks")), 10), plain(str(b.get("runs")), 10)
    order = b.get("order") if isinstance(b.get("order"), list) else []
    shown = ", ".join(plain(str(sid), 200) for sid in order[:MAX_SHOWN])
    more = len(order) - MAX_SHOWN
    if b.get("blocks") == "auto":
        low, high = plain(str(design.get("min_blocks")), 10), plain(str(design.get("max_blocks")), 10)
        j = (f"at least {low} blocks, then one more at a time while its comparison against no speculation is open "
             f"at some client setting (repeats: auto: a look after each block, anytime p-values, Holm over the "
             f"concurrency), at most {high} ({plain(str(b.get('runs_why', '')), 300)}):")
    else:
        j = f"{j} blocks,"
    return [f"design: back-to-back blocks: for each candidate {j} each no speculation's server and the "
            f"candidate's started together on disjoint devices, {k} pairs of runs alternating (each at least {gap} s "
            f"after the other server's last request), then both stopped; the devices are "
            f"{plain(str(design.get('devices', 'crossed over')), 300)}; each round of blocks visits the candidates in "
            f"a random order (order_seed {plain(str(b.get('order_seed')), 20)}). A block's mean log ratio is the unit "
            f"of each speedup: with 3 or more blocks its t interval on blocks - 1 df comes from the blocks' own "
            f"spread, with 2 from the noise components (between-start and paired within-start). No larger "
            f"lookahead is skipped as dominated. Order: {shown}" + (f" and {more} more" if more > 0 else "")]


def block_rule_of(design: dict[str, Any] | None) -> tuple[int, int, float] | None:
    """Blocks added until decided: (min_blocks, max_blocks, confidence) as the plan recorded them
    (checked: None where they are absent or out of bounds)."""
    from llama4spec.stats.interval import CONFIDENCE
    from llama4spec.stats.looks import REPEATS_CAP

    d = design or {}
    low, high = number(d.get("min_blocks"), 2, REPEATS_CAP), number(d.get("max_blocks"), 2, REPEATS_CAP)
    level = number(d.get("confidence"), 0.5, 0.999999)
    if low is None or high is None or low != int(low) or high != int(high) or low > high:
        return None
    return int(low), int(high), float(level) if level is not None else CONFIDENCE


def margin_of(design: dict[str, Any] | None) -> float:
    """The sweep's equivalence margin as its plan recorded it (checked: the default otherwise)."""
    value = (design or {}).get("margin")
    return float(value) if margin_problem(value) is None else MARGIN


IMAGES = {
    "acceptance by position": "acceptance_by_position",
    **{plot.title.lower(): plot.stem for _, plot in registry.plotted()},  # a sweep figure against concurrency
    "speedup, measured vs predicted": "speedup",
    "acceptance length per request": "acceptance_per_request",
}


def artifacts(step_dir: Path) -> dict[str, Path]:
    files = {"report": step_dir / "report.md", "analysis": step_dir / "sweep.json", "table": step_dir / "sweep.csv"}
    files.update({stem: step_dir / f"{stem}.png" for stem in IMAGES.values()})
    return {**files, **frontier_part.files(step_dir)}


def write_files(analysis: Analysis, points: list[Point], files: dict[str, Path],
                measured: dict[str, Measured] | None = None, colocation: dict[str, Any] | None = None,
                design: dict[str, Any] | None = None,
                budget_stop: str | None = None) -> tuple[dict[str, list[str]], str, dict[str, Any]]:
    """The PNGs, the analysis JSON (with ``colocation`` when a launcher's groups measured the
    points, ``budget_stop`` when its blocks stopped at a budget), the CSV (a row per point and
    repeat); returns each PNG's series, the Markdown report (report.md, written by the caller once
    it has added to it) and sweep.json's analysis record."""
    raw = sweep_json.to_record(analysis)
    record = checked(SweepRecord, files["analysis"], raw)  # nothing written if it breaks a rule
    files["report"].parent.mkdir(parents=True, exist_ok=True)
    series = {
        "acceptance_by_position": plots.acceptance_by_position(points, files["acceptance_by_position"]),
        **{plot.stem: plots.figure_vs_concurrency(points, f, plot, files[plot.stem]) for f, plot in registry.plotted()},
        "speedup": plots.speedup_measured_vs_predicted(analysis, files["speedup"]),
        "acceptance_per_request": plots.acceptance_per_request(points, files["acceptance_per_request"]),
    }
    images = {title: files[stem].name for title, stem in IMAGES.items()}
    text = render.markdown(analysis, images)
    stops = {pid: m.record.stop for pid, m in (measured or {}).items() if m.record.stop}  # repeats: auto
    write_json(files["analysis"], {**record, "plots": series, **({"stops": stops} if stops else {}),
                                   **({"colocation": colocation} if colocation else {}),
                                   **({"design": design} if design else {}),
                                   **({"budget_stop": budget_stop} if budget_stop else {})})
    if "table" in files:
        header, rows = csv_rows([pt.id for pt in points], measured or {})
        write_atomic(files["table"], csv_text(header, rows))
    return series, text, raw


def _by_concurrency(points: list[Point], beside: dict[str, tuple[str, ...]] | None) -> dict[int, dict[str, tuple[str, ...]]]:
    """Concurrency -> point id -> the groups that ran beside it (``runbook.colocation.mixed`` reads it)."""
    by_c: dict[int, dict[str, tuple[str, ...]]] = {}
    for pt in points if beside else []:
        by_c.setdefault(pt.concurrency, {})[pt.id] = beside.get(pt.id, ())
    return by_c


def report_points(ids: list[str], measured: dict[str, Measured], files: dict[str, Path], console: Console,
                  not_run: dict[str, str] | None = None, beside: dict[str, tuple[str, ...]] | None = None,
                  design: dict[str, Any] | None = None, price: float | None = None) -> tuple[str, dict[str, Any]]:
    """A sweep's report over points ``ids`` from their records: written to ``files``, printed;
    returns (markdown, record). ``not_run``: step id -> why it has no result, from the run's status;
    ``beside``: point id -> the groups that ran beside its own while it measured (a launcher's);
    ``design``: the sweep step's ``design_record`` (said in the report when interleaving was asked for);
    ``price``: a device-hour price, for the frontier's price per million tokens."""
    points = sweep_points((pid, measured[pid].config, measured[pid].record) for pid in ids if pid in measured)
    missing = [pid for pid in ids if pid not in measured]
    analysis = analyse(points, of_sweep(design, [m.config for m in measured.values()]), margin=margin_of(design),
                       block_rule=block_rule_of(design))
    warnings = groups.mixed(_by_concurrency(points, beside))
    colocation = {"beside": {pid: list(v) for pid, v in beside.items()}, "warnings": warnings} if beside else None
    budget = stop_note(not_run)
    _, text, record = write_files(analysis, points, files, measured, colocation, design, budget)
    render.render(console, analysis)
    front = frontier_part.of_points(points, {p.id: measured[p.id].config for p in points}, analysis,
                                    margin_of(design), price)
    text += frontier_part.write(front, files["report"].parent)
    for line in [*filter(None, [frontier_words.lead(front)]), *front.notes]:
        say(console, f"frontier: {line}")
    why = {pid: (not_run or {}).get(pid, "no record") for pid in missing}
    stops = {pid: measured[pid].record.stop for pid in ids if pid in measured and measured[pid].record.stop}
    if stops:  # repeats: auto: why each point stopped, after how many runs
        text += "\nmeasured until decided:\n\n" + "".join(
            f"- {pid}: {s['reason']} after {s.get('runs', '?')} runs"
            + (f" of {s['starts']} server starts" if s.get("starts", 1) > 1 else "")
            + (f" ({s['verdict']})" if s.get("verdict") else "") + "\n" for pid, s in stops.items())
    cached = prefix_part.lines(ids, measured)
    if cached:  # the server's prefix-cache counters around each counted run
        text += "\nprefix cache (tokens found over prompt tokens looked up, from /metrics):\n\n" + "".join(
            f"- {line}\n" for line in cached)
        for line in cached:
            say(console, f"prefix cache: {line}")
    if missing:
        text += "\nnot measured:\n\n" + "".join(f"- {pid}: {reason}\n" for pid, reason in why.items())
    if budget:
        text += f"\n{STOPPED}: {budget}\n"
    for line in warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)
    if warnings:
        text += "\nco-location:\n\n" + "".join(f"- warning: {line}\n" for line in warnings)
    for line in design_lines(design):
        console.print(escape(line), highlight=False, soft_wrap=True)
        text += f"\n{line}\n"
    write_atomic(files["report"], text)
    return text, {**record, "missing": missing, **({"not_measured": why} if missing else {}),
                  "frontier": frontier_words.record(front),
                  **({"design": design} if design else {}),
                  **({"stops": stops} if stops else {}), **({"colocation": colocation} if colocation else {}),
                  **({"budget_stop": budget} if budget else {})}


def run_report(plan, planned, console: Console, failures: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """Analyse a sweep step's points, write its files, print it; returns (markdown, record).
    ``failures``: step id -> why it has no result ("failed: ...", "skipped: ..."), from the run's status."""
    ids = planned.step.points
    return report_points(ids, measured_in_plan(plan, ids), planned.artifacts, console, failures,
                         design=design_of(planned.step), price=planned.step.keys.price)


def linked(text: str, step_id: str) -> str:
    """A report's image links as seen from the run directory (summary.md), one level up."""
    for stem in [*IMAGES.values(), "frontier"]:
        text = text.replace(f"]({stem}.png)", f"]({step_id}/{stem}.png)")
    return text


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, bool, int, float)) and len(str(value)) <= 300


def _design(step: Mapping[str, Any], prior: bool = False) -> dict[str, Any] | None:
    """The sweep's ``design`` as plan.json holds it: its scalars, its back-to-back blocks or starts
    (their scalars and the order of their serve steps, each a step id as planning accepts it), and with
    ``prior`` its noise prior (checked where read); None without one."""
    design = step.get("design")
    if not isinstance(design, dict):
        return None
    out: dict[str, Any] = {}
    for key, value in design.items():
        if _scalar(value) or prior and key == "noise_prior" and isinstance(value, dict):
            out[str(key)] = value
        elif key in NESTED and isinstance(value, dict):
            order = value.get("order") if isinstance(value.get("order"), list) else []
            out[key] = {**{str(k): v for k, v in value.items() if _scalar(v)},
                        "order": [sid for sid in order[:MAX_ORDER] if is_step_id(sid)]}
    return out


@dataclass
class Rebuilt:
    """A sweep's part of ``report``: its points over every run directory given, its design as the
    last of them planned it."""

    id: str
    points: list[str]
    design: dict[str, Any] | None = None
    writes: list[str] = field(default_factory=list)
    price: float | None = None  # per device-hour, as the last source planned it
    notes: list[str] = field(default_factory=list)  # measured in two designs across the sources (merge_designs)

    def read(self, ctx: MergeRead) -> None:
        pass

    def write(self, ctx: MergeRead) -> int:
        """Its report from its points' records into ``ctx.out``; returns the points missing."""
        beside: dict[str, tuple[str, ...]] = {}
        for s in ctx.sources:  # the groups that ran beside each point's group on its node (a launcher's)
            beside.update(groups.beside_points(s.dir, {pid: m.where for pid, m in ctx.measured.items()
                                                       if pid not in beside}))
        text, record = report_points(self.points, ctx.measured, artifacts(ctx.out / self.id), ctx.console,
                                     ctx.reasons, {pid: beside[pid] for pid in self.points if pid in beside},
                                     self.design, self.price)
        ctx.comparisons[self.id] = linked(text, self.id)
        return len(record["missing"])


def merge_part(sid: str, sources: list[Any]) -> Rebuilt:
    """A sweep step's part of ``report`` from its plan.json entries (its points: the bench steps it
    needs, over every source in order; its design: the last source's)."""
    part = Rebuilt(sid, [])
    for source in sources:
        kinds, step = source.kinds(), source.step(sid)
        if step is None:
            continue
        ids = [n for n in step.get("needs") or [] if traits_of(kinds.get(n)).benchmarks]
        part.points = list(dict.fromkeys([*part.points, *ids]))
        part.price = frontier_part.price_of(step)
        if isinstance(step.get("design"), dict):
            check_recorded(step["design"], str(source.dir / "plan.json"))
            part.design = _design(step, prior=True)
    part.notes = design_warnings(sources, sid)
    return part


def page_part(read: PageRead, step: Mapping[str, Any], page) -> None:
    """One sweep's section of report.html (``sweep.section.SweepSection``): its points analysed
    from their records, its plots, stops, co-location."""
    from llama4spec.sweep.section import SweepSection

    source, secrets = read.sources[0], read.secrets
    kinds = source.kinds()
    ids = [n for n in step.get("needs") or [] if traits_of(kinds.get(n)).benchmarks]
    left_out: dict[str, str] = {}
    measured = read.collect(ids, left_out)
    points = sweep_points((pid, measured[pid].config, measured[pid].record) for pid in ids if pid in measured)
    design = step.get("design") if isinstance(step.get("design"), dict) else None
    prior = of_sweep(design, [m.config for m in measured.values()], str(source.dir / "plan.json"))
    analysis = analyse(points, prior, margin=margin_of(design), block_rule=block_rule_of(design))
    reasons = {**not_run(source.status.get("steps") or []), **left_out}
    missing = {pid: reasons.get(pid, "no record") for pid in ids if pid not in measured}
    beside = groups.beside_points(source.dir, {pid: m.where for pid, m in measured.items()})
    notes = [f"warning: {line}" for line in groups.mixed(_by_concurrency(points, beside))] + design_lines(_design(step))
    notes += [f"prefix cache: {line}" for line in prefix_part.lines(ids, measured)] + band_report.lines(analysis)
    sid = str(step["id"])
    stops = {pid: dict(m.record.stop) for pid, m in measured.items() if m.record.stop}
    front = frontier_part.of_points(points, {p.id: measured[p.id].config for p in points}, analysis,
                                    margin_of(design), frontier_part.price_of(step))
    page.lead += redact(frontier_part.lead(front, sid), secrets)
    notes += [f"frontier: {line}" for line in redact(list(front.notes), secrets)]
    shown = [*IMAGES.items(), *([(frontier_part.TITLE, "frontier")] if front.drawn else [])]
    page.sections.append(SweepSection(
        id=sid, analysis=analysis, figures=[read.figure(title, source.dir / sid / f"{stem}.png")
                                            for title, stem in shown],
        stops=stops, not_measured=redact(missing, secrets), beside=beside, notes=redact(notes, secrets)))
