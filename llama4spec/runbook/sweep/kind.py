"""A ``sweep`` step's report: the matrix expanded into serve/bench/stop steps before it (see
``runbook.sweep.expand``); this step reads their records, analyses them and writes the report, the
analysis JSON and CSV, and the plots into its own directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape

from llama4spec import figures as registry
from llama4spec.files import csv_text, number, plain, write_atomic, write_json
from llama4spec.runbook import fields
from llama4spec.runbook.fields import AUTO
from llama4spec.runbook.matrix import TooLarge, check_matrix, matrix_points, points_problem
from llama4spec.runbook.measured import measured_in_plan
from llama4spec.runbook.rundir import Measured, csv_rows
from llama4spec.runbook.spec import Traits
from llama4spec.runbook.steps.base import BaseKind
from llama4spec.runbook.sweep.rule import Rule
from llama4spec.runbook.sweep.expand import DESIGNS, INTERLEAVED, SEQUENTIAL, expand_step
from llama4spec.analysis import plots, sweep_tables as render
from llama4spec.analysis.decide import CONFIDENCE, MAX_REPEATS, MIN_REPEATS
from llama4spec.analysis.model import Analysis, Point, analyse
from llama4spec.analysis.noise import MARGIN, margin_problem, precision_problem
from llama4spec.analysis.points import points as sweep_points


def _margin(raw: dict, key: str, at: str, problems: list[str]) -> float:
    value = raw.get(key, MARGIN)
    problem = margin_problem(value, f"{at}: {key}")
    if problem:
        problems.append(problem)
        return MARGIN
    return float(value)


def _precision(raw: dict, key: str, at: str, problems: list[str]) -> float | None:
    value = raw.get(key)
    problem = None if value is None else precision_problem(value, f"{at}: {key}")
    if problem:
        problems.append(problem)
    return None if value is None or problem else float(value)


def _matrix(raw: dict, key: str, at: str, problems: list[str]) -> dict[str, list[str]] | None:
    matrix, found = check_matrix(raw.get(key), at)
    problems.extend(found)
    return matrix if matrix or isinstance(matrix, TooLarge) else None


@dataclass
class Keys:
    matrix: dict[str, list[str]] | None = fields.custom(_matrix, default=None)  # config key -> values
    overrides: list[str] = fields.overrides()
    extra_args: list[str] = fields.texts()  # more `vllm bench serve` flags, for every point
    verify_schedule: bool = fields.flag()  # also measure the lookahead schedule derived from its points
    repeats: int | str = fields.repeats(3)  # counted runs per point, or auto: until its comparisons are decided
    warmup: int = fields.count(0, 0, fields.MAX_WARMUP)  # warm-up requests per point, unrecorded
    rule: Rule = fields.group(Rule)  # repeats: auto: min_repeats, max_repeats, confidence (written beside these)
    skip_dominated: bool = fields.flag(True)  # a larger lookahead whose bound cannot reach the leader is not started
    revisit: bool = fields.flag()  # repeats: auto: start again the servers whose points the first pass left undecided
    # interleaved: no speculation stays up beside each candidate on the other half of the devices, their
    # runs alternate (A B A B ...) and each speedup is the paired ratio of back-to-back runs
    design: str = fields.choice(*DESIGNS)
    swap_devices: bool = fields.flag()  # interleaved: no speculation on the second half of the devices, not the first
    gap_s: float = fields.seconds(2.0, 600.0)  # interleaved: the least pause between one server's last request and the other's run
    noise: str | None = fields.text()  # a noise.json (`llama4spec calibrate`): the prior of every comparison
    margin: float = fields.custom(_margin, default=MARGIN)  # equivalent: a ratio within +-margin, decided by two one-sided tests
    precision: float | None = fields.custom(_precision, default=None)  # the relative half-width wanted: the design's starts and runs
    fallback: str | None = None  # generated: why an interleaved sweep is measured sequentially here
    async_pinned: str | None = None  # generated: async scheduling pinned off on every server, and why
    prior: dict[str, Any] | None = None  # generated: the noise its comparisons start from (``noise_record``)
    points: list[str] = field(default_factory=list)  # generated: the bench steps it expands to

    def design_record(self) -> dict[str, Any]:
        """How the sweep measured its pairs (plan.json, sweep.json, the report)."""
        used = INTERLEAVED if self.design == INTERLEAVED and not self.fallback else SEQUENTIAL
        out: dict[str, Any] = {"design": used, "asked": self.design, "margin": self.margin}
        if self.precision is not None:
            out["precision"] = self.precision
        if self.prior is not None:
            out["noise_prior"] = self.prior
        if self.fallback:
            out["fallback"] = self.fallback
        if self.async_pinned:
            out["async_scheduling"] = self.async_pinned
        if used == INTERLEAVED:
            first, second = ("candidates", "no speculation") if self.swap_devices else ("no speculation", "candidates")
            out.update(gap_s=self.gap_s, swap_devices=self.swap_devices,
                       devices=f"a fixed factor: {first} on the first half of the devices, {second} on the second")
        return out


def design_lines(design: dict[str, Any] | None) -> list[str]:
    """The design in sentences (the dry run and the report), and async scheduling where it was pinned."""
    pinned = (design or {}).get("async_scheduling")
    return _design_words(design) + ([plain(pinned, 500)] if isinstance(pinned, str) else [])


def _design_words(design: dict[str, Any] | None) -> list[str]:
    if not design or design.get("asked") != INTERLEAVED:
        return []
    if design.get("design") != INTERLEAVED:
        return [f"design: sequential (interleaved was asked for, but {design.get('fallback')})"]
    gap = design.get("gap_s")
    gap = f"{number(gap, 0, 600):g}" if number(gap, 0, 600) is not None else "2"
    return [f"design: interleaved: no speculation stays up beside each candidate on disjoint devices and their runs "
            f"alternate, each at least {gap} s after the other server's last request; each "
            f"speedup is the paired t interval of the mean log ratio of back-to-back runs, with the between-start "
            f"term (interleaving cancels drift, not a server start's offset); the device is "
            f"{design.get('devices', 'a fixed factor')} (swap_devices: true swaps them)"]


def margin_of(design: dict[str, Any] | None) -> float:
    """The sweep's equivalence margin as its plan recorded it (checked: the default otherwise)."""
    value = (design or {}).get("margin")
    return float(value) if margin_problem(value) is None else MARGIN


def noise_lines(prior: dict[str, Any] | None, margin: float, runs: tuple[int, int] = (MIN_REPEATS, MAX_REPEATS),
                confidence: float = CONFIDENCE, precision: float | None = None,
                max_repeats: int | None = None) -> list[str]:
    """The noise a sweep's comparisons start from, and its margin of equivalence (the dry run);
    from a profile (its costs recorded), the design its components and costs call for and the
    precision it is expected to reach (``runs``: the fewest and most runs a point gets); with the
    ``precision`` key, the starts, runs and time it needs and whether ``max_repeats`` caps them."""
    from llama4spec.analysis.noise import design_lines, noise_from_record

    noise = noise_from_record(prior)
    if noise is None:
        return []
    lines = [f"noise: {noise.text()}; pooled by df with the sweep's own estimate where its settings have runs "
             f"from two or more server starts"]
    if isinstance(prior.get("checked"), str):
        lines.append(f"profile: {prior['checked']}")
    costs = prior.get("costs") if isinstance(prior.get("costs"), dict) else {}
    start_s, run_s = number(costs.get("start_s"), 0, 1e6), number(costs.get("run_s"), 0, 1e6)
    if noise.provisional is None:
        lines += design_lines(noise, (start_s, run_s) if start_s and run_s else None, runs, precision, confidence,
                              max_repeats)
    elif precision is not None:
        lines.append(f"precision: +-{100 * precision:g}% is not planned: the noise above is provisional")
    return lines + [f"equivalence: two settings within +-{100 * margin:g}% of each other are declared equivalent "
                    f"(two one-sided tests; margin: sets it)"]


def check(keys: Keys, at: str, problems: list[str], state: dict[str, Any]) -> None:
    """At most MAX_POINTS points over every sweep of the runbook: a matrix beyond them is refused
    (never expanded)."""
    if isinstance(keys.matrix, TooLarge):  # an axis beyond its bound: refused (check_matrix said why)
        keys.matrix = None
        state["too_large"] = True
    if keys.matrix:
        before = state.get("points", 0)
        too_many = points_problem(keys.matrix, at, before)
        if too_many:
            problems.append(too_many)
            keys.matrix = None
            state["too_large"] = True  # nothing of the runbook is planned (composed) then
        else:
            state["points"] = before + matrix_points(keys.matrix)
    problems.extend(fields.warmup_flag_problems(keys.extra_args, at))
    problems.extend(fields.own_flag_problems(keys.extra_args, at, fields.BENCH_OWN_FLAGS))


# keys that act only in one design: written in a sweep of another, they would do nothing
DESIGN_KEYS = {INTERLEAVED: ("gap_s", "swap_devices")}


def conflicts(keys: Keys, at: str, written: frozenset[str]) -> list[str]:
    """Keys that contradict one another: revisit without repeats: auto, min above max repeats, a
    key of another design than the sweep's (as written in the runbook)."""
    problems = []
    if keys.revisit and keys.repeats != AUTO:
        problems.append(f"{at}: revisit: true restarts the servers of points still undecided, which needs "
                        f"'repeats: auto' (this step has repeats: {keys.repeats}); set repeats: auto or drop revisit")
    problems.extend(f"{at}: {p}" for p in keys.rule.problems())
    for design, names in DESIGN_KEYS.items():
        idle = [name for name in names if name in written]
        if idle and keys.design != design:
            problems.append(f"{at}: {', '.join(idle)} act only in the {design} design, and this sweep's design is "
                            f"{keys.design}; drop {', '.join(idle)} or set design: {design}")
    return problems

IMAGES = {
    "acceptance by position": "acceptance_by_position",
    **{plot.title.lower(): plot.stem for _, plot in registry.plotted()},  # a sweep figure against concurrency
    "speedup, measured vs predicted": "speedup",
    "acceptance length per request": "acceptance_per_request",
}


def artifacts(step_dir: Path) -> dict[str, Path]:
    files = {"report": step_dir / "report.md", "analysis": step_dir / "sweep.json", "table": step_dir / "sweep.csv"}
    files.update({stem: step_dir / f"{stem}.png" for stem in IMAGES.values()})
    return files


def plan(ctx, p) -> None:
    """Its files and the noise its comparisons start from (``runbook.noise_prior.at_plan``)."""
    from llama4spec.runbook.noise_prior import at_plan

    p.artifacts = artifacts(p.dir)
    if p.step.keys.matrix and p.step.keys.points:  # expanded (a sweep refused is not composed)
        p.step.keys.prior = at_plan(ctx, p, p.step.keys.noise, p.step.keys.overrides)


def write(analysis: Analysis, points: list[Point], files: dict[str, Path],
          measured: dict[str, Measured] | None = None,
          colocation: dict[str, Any] | None = None,
          design: dict[str, Any] | None = None) -> tuple[dict[str, list[str]], str]:
    """The PNGs, the analysis JSON (with ``colocation`` when a launcher's groups measured the
    points), the CSV (a row per point and repeat), the Markdown report; returns each PNG's series
    and the report."""
    files["report"].parent.mkdir(parents=True, exist_ok=True)
    series = {
        "acceptance_by_position": plots.acceptance_by_position(points, files["acceptance_by_position"]),
        **{plot.stem: plots.figure_vs_concurrency(points, f, plot, files[plot.stem]) for f, plot in registry.plotted()},
        "speedup": plots.speedup_measured_vs_predicted(analysis, files["speedup"]),
        "acceptance_per_request": plots.acceptance_per_request(points, files["acceptance_per_request"]),
    }
    images = {title: files[stem].name for title, stem in IMAGES.items()}
    text = render.markdown(analysis, images)
    write_atomic(files["report"], text)
    stops = {pid: m.record.stop for pid, m in (measured or {}).items() if m.record.stop}  # repeats: auto
    write_json(files["analysis"], {**render.to_record(analysis), "plots": series,
                                             **({"stops": stops} if stops else {}),
                                             **({"colocation": colocation} if colocation else {}),
                                             **({"design": design} if design else {})})
    if "table" in files:
        header, rows = csv_rows([pt.id for pt in points], measured or {})
        write_atomic(files["table"], csv_text(header, rows))
    return series, text


def report_points(ids: list[str], measured: dict[str, Measured], files: dict[str, Path], console: Console,
                  not_run: dict[str, str] | None = None, beside: dict[str, tuple[str, ...]] | None = None,
                  design: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """A sweep's report over points ``ids`` from their records: written to ``files``, printed;
    returns (markdown, record). ``not_run``: step id -> why it has no result, from the run's status;
    ``beside``: point id -> the groups that ran beside its own while it measured (a launcher's);
    ``design``: the sweep step's ``design_record`` (said in the report when interleaving was asked for)."""
    from llama4spec.runbook.colocation import mixed

    from llama4spec.runbook.noise_prior import of_sweep

    points = sweep_points((pid, measured[pid].config, measured[pid].record) for pid in ids if pid in measured)
    missing = [pid for pid in ids if pid not in measured]
    analysis = analyse(points, of_sweep(design, [m.config for m in measured.values()]), margin=margin_of(design))
    by_c: dict[int, dict[str, tuple[str, ...]]] = {}
    for pt in points if beside else []:
        by_c.setdefault(pt.concurrency, {})[pt.id] = beside.get(pt.id, ())
    warnings = mixed(by_c)
    colocation = {"beside": {pid: list(v) for pid, v in beside.items()}, "warnings": warnings} if beside else None
    _, text = write(analysis, points, files, measured, colocation, design)
    render.render(console, analysis)
    why = {pid: (not_run or {}).get(pid, "no record") for pid in missing}
    stops = {pid: measured[pid].record.stop for pid in ids if pid in measured and measured[pid].record.stop}
    if stops:  # repeats: auto: why each point stopped, after how many runs
        text += "\nmeasured until decided:\n\n" + "".join(
            f"- {pid}: {s['reason']} after {s.get('runs', '?')} runs"
            + (f" of {s['starts']} server starts" if s.get("starts", 1) > 1 else "")
            + (f" ({s['verdict']})" if s.get("verdict") else "") + "\n" for pid, s in stops.items())
    if missing:
        text += "\nnot measured:\n\n" + "".join(f"- {pid}: {reason}\n" for pid, reason in why.items())
    for line in warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)
    if warnings:
        text += "\nco-location:\n\n" + "".join(f"- warning: {line}\n" for line in warnings)
    for line in design_lines(design):
        console.print(escape(line), highlight=False, soft_wrap=True)
        text += f"\n{line}\n"
    if stops or missing or warnings or design_lines(design):
        write_atomic(files["report"], text)
    return text, {**render.to_record(analysis), "missing": missing, **({"not_measured": why} if missing else {}),
                  **({"design": design} if design else {}),
                  **({"stops": stops} if stops else {}), **({"colocation": colocation} if colocation else {})}


def run_report(plan, planned, console: Console, failures: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """Analyse a sweep step's points, write its files, print it; returns (markdown, record).
    ``failures``: step id -> why it has no result ("failed: ...", "skipped: ..."), from the run's status."""
    ids = planned.step.keys.points
    return report_points(ids, measured_in_plan(plan, ids), planned.artifacts, console, failures,
                         design=planned.step.keys.design_record())


def linked(text: str, step_id: str) -> str:
    """A report's image links as seen from the run directory (summary.md), one level up."""
    for stem in IMAGES.values():
        text = text.replace(f"]({stem}.png)", f"]({step_id}/{stem}.png)")
    return text


def execute(run, p) -> dict[str, Any]:
    text, record = run_report(run.plan, p, run.console, run.not_run())
    run.keep_comparison(p.id, linked(text, p.id))
    return record


def describe(p, say) -> None:
    keys = p.step.keys
    if keys.matrix:
        say("    matrix: " + " x ".join(f"{k} [{', '.join(v)}]" for k, v in keys.matrix.items()))
        say(f"    report over {len(keys.points)} points (speedup, efficiency, best lookahead, plots)")
        for line in design_lines(keys.design_record()):
            say(f"    {line}")
        rule = keys.rule
        runs = (rule.min_repeats, rule.max_repeats) if keys.repeats == "auto" else (keys.repeats, keys.repeats)
        cap = rule.max_repeats if keys.repeats == "auto" else None
        for line in noise_lines(keys.prior, keys.margin, runs, rule.confidence, keys.precision, cap):
            say(f"    {line}")


KIND = BaseKind("sweep", Keys, Traits(expands=True, merges=True, measures=True, decides=True, describe_first=True),
                plan, execute, describe, check=check, conflicts=conflicts, expand=expand_step,
                plan_record=lambda keys: {"design": keys.design_record()})
