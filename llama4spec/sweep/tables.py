"""The sweep report: a table per concurrency, the model beside it, and compact terminal bars.
Renderers take a Console and return nothing; ``markdown`` returns text for ``summary.md``; the
analysis as JSON-able data: ``sweep.to_json``."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.text import Text
from rich.table import Table

from llama4spec import figures as registry
from llama4spec.analysis import band_report, categories, tail
from llama4spec.stats.interval import BOOTSTRAP_FROM, CONFIDENCE, Interval
from llama4spec.stats.noise import Noise
from llama4spec.stats.point import Point, label
from llama4spec.stats.speedup_model import temperature_findings
from llama4spec.stats.speedup_results import Analysis, AtConcurrency, Fit, Row
from llama4spec.sweep.schedule_fit import derive_all
from llama4spec.sweep.schedule_words import SCHEDULE_NOTE, interval_text, schedule_lines, schedule_verdict, undecided


def columns(short: bool = False) -> list[str]:
    """A table's header: the sweep's figures (``figures.sweep()``) between the setting and the speedup;
    narrow (terminal), a figure marked ``interval_column`` has its 95% interval in a column of its own."""
    if short:
        figures = [c for f in registry.sweep() for c in (f.short, "95% CI")[:1 + f.interval_column]]
        return ["setting", *figures, "speedup", "95% CI", "bound", "eff", "model"]
    return ["setting", *(f.label for f in registry.sweep()), "speedup", "bound", "efficiency", "predicted", "vs none"]


def _f(value: float | None, fmt: str = ".2f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{fmt}}{suffix}"


def short_name(p: Point, a: AtConcurrency) -> str:
    """'k=3' where one draft is swept, 'none' for no speculation (narrow terminals)."""
    if not p.speculative:
        return "none" + p.setting
    if p.scheduled:
        return "schedule" + p.setting if len(a.fits) <= 1 else p.name
    return f"k={p.lookahead}{p.setting}" if len(a.fits) <= 1 else p.name


def _ci(iv: Interval | None, fmt: str = ".1f") -> str:
    return f"{iv.low:{fmt}}-{iv.high:{fmt}}" if iv is not None and iv.low is not None and iv.high is not None else "-"


def rows(a: AtConcurrency, short: bool = False) -> list[list[str]]:
    """The table of one concurrency as text cells: no speculation first, then by draft and lookahead.
    Figures are medians over the repeats; the Markdown cells carry their 95% intervals and each
    speedup's Welch interval at its Holm level, with the verdict against no speculation; the
    terminal shows the intervals of throughput and speedup in columns of their own."""
    out = []
    name = (lambda p: short_name(p, a)) if short else (lambda p: p.name)

    def cells(p: Point, speedup: list[str], rest: list[str]) -> list[str]:
        return [name(p), *figure_cells(p, short), *(speedup if short else speedup[:1]), *rest]

    def speed(r: Row) -> list[str]:
        return ([_f(r.speedup, ".2f", "x"), _ci(r.speedup_interval, ".2f")] if short
                else [r.comparison.text() if r.comparison is not None else _f(r.speedup, ".2f", "x")])

    if a.baseline is not None:
        out.append(cells(a.baseline, ["1.00x", "-"] if short else ["1.00x"], ["-", "-", "-"] + ([] if short else ["-"])))
    for r in a.others:  # settings without speculation against the baseline: no draft, no model
        out.append(cells(r.point, speed(r), ["-", "-", "-"] + ([] if short else [r.verdict or "-"])))
    for r in a.rows:
        p = r.point
        out.append(cells(p, speed(r), [_f(r.bound, ".2f", "x"),
                                    _f(None if r.efficiency is None else 100 * r.efficiency, ".0f", "%"),
                                    _f(r.predicted, ".2f", "x")] + ([] if short else [r.verdict or "-"])))
    return out


def figure_cells(p: Point, short: bool = False) -> list[str]:
    """A point's cells of the sweep's figures: the median and its 95% interval in brackets; narrow:
    the median alone, and the interval in a column of its own where the figure asks for one."""
    if not short:
        return [interval_text(p.interval(f.key), f.fmt) for f in registry.sweep()]
    return [c for f in registry.sweep()
            for c in (_f(p.value(f.key), f.fmt), _ci(p.interval(f.key), f.fmt))[:1 + f.interval_column]]


def noise_sentence(noise: Noise | None) -> str:
    """The noise estimate every comparison of a sweep carries: each component's sd, df and source."""
    return "no between-start term (each run its own server start)" if noise is None else noise.text()


def method_line(analysis: Analysis) -> str:
    """How the intervals were computed and the settings compared, from the repeats the points have."""
    counts = sorted({p.repeats for a in analysis.at for p in a.points if p.repeats})
    if not counts or counts == [1]:
        return ("Each point was measured once: no figure carries an interval, no comparison is decided, and the "
                "recommendation is the highest median, which may be noise.")
    few = [n for n in counts if 1 < n < BOOTSTRAP_FROM]
    many = [n for n in counts if n >= BOOTSTRAP_FROM]
    how = []
    if few:
        how.append(f"Student-t intervals of the mean ({', '.join(map(str, few))} repeats)")
    if many:
        how.append(f"bootstrap intervals of the median ({', '.join(map(str, many))} repeats)")
    return (f"Each figure is the median of a point's repeated runs, with its 95% interval in brackets: "
            f"{' and '.join(how)}. Two settings compare by Welch's t on the difference of their mean log "
            f"throughputs, the between-start variance added for each side over its server starts (whole where a "
            f"setting had one start): "
            f"{noise_sentence(analysis.noise)}; "
            f"with Holm over every ordered pair of settings at a concurrency: at most {1 - CONFIDENCE:.0%} chance "
            f"of any false verdict per concurrency. A speedup is the ratio of geometric means with its Welch "
            f"interval at the level of its Holm step (so it excludes 1 exactly when the verdict is decided). The "
            f"recommendation is the highest median among the settings no other is declared faster than; undecided "
            f"when it is not declared faster than every other, never no speculation merely because an interval "
            f"spans 1." + (
                " Points measured until decided are compared by the rule that gave them their runs: each pair "
                "at its look (the first min(n_a, n_b) runs a side), by its anytime p-value (Bonferroni over every "
                "reachable look), with Holm over the concurrency; their intervals are at the look's share of the "
                "level." if any(a.rule for a in analysis.at) else "") + (
                " Where no speculation and a candidate were measured back to back (design: interleaved), that pair "
                "compares by the paired t on the mean log ratio of its back-to-back runs instead (drift common to "
                "both cancels; the between-start term stays), in the same Holm family." if any(a.paired for a in analysis.at)
                else "") + (
                " Where they were measured in back-to-back blocks (both servers started together for each block, "
                "the devices crossed over), a block's mean log ratio is the unit: with 3 or more blocks the t "
                "interval on blocks - 1 df comes from the blocks' own spread, with 2 from the between-start and "
                "paired within-start components; each such speedup says which, in the same Holm family."
                if any(a.blocks for a in analysis.at) else ""))


def category_stats(analysis: Analysis) -> list[categories.CategoryStat]:
    """The speculative points measured on one prompt category, for the category x position table."""
    return [categories.CategoryStat(a.category, r.point.draft, r.point.lookahead, a.concurrency, r.point.prompts,
                                    r.point.acceptance_length, r.point.rates, r.speedup)
            for a in analysis.at if a.category for r in a.rows if not r.point.scheduled]


TAIL_NOTE = (f"Each point's requests (its counted runs pooled) beyond its P{tail.QUANTILE} TPOT against the rest: "
             f"a request is low-acceptance below the point's median acceptance length; over-representation = share "
             f"of the tail / share overall; Fisher's exact test, one-sided, level {tail.LEVEL:g}. A TTFT is fixed "
             f"before the first verification step, so TTFT tails are told by queueing and arrival instead.")


def attributions(analysis: Analysis) -> tuple[list[tuple[Point, tail.Attribution]], list[str]]:
    """Each speculative point's TPOT tail attributed, and the points whose requests are too few
    for it (one line each): computed once per analysis, however many renderings ask."""
    if "tails" not in analysis.derived:
        analysis.derived["tails"] = _attributions(analysis)
    return analysis.derived["tails"]


def _attributions(analysis: Analysis) -> tuple[list[tuple[Point, tail.Attribution]], list[str]]:
    out, short = [], []
    for sub in [a for _, a in analysis.by_temperature] or [analysis]:
        for a in sub.at:
            for r in a.rows:
                if not r.point.requests:
                    continue
                found = tail.attribute(r.point.requests)
                if found is not None:
                    out.append((r.point, found))
                else:
                    short.append(f"{r.point.id}: fewer than {tail.MIN_TAIL} requests beyond its P{tail.QUANTILE} "
                                 f"TPOT ({len(r.point.requests)} requests): no attribution; measure "
                                 f"{11 * tail.MIN_TAIL} or more requests (its runs pooled)")
    return out, short


def tail_title(p: Point) -> str:
    return f"{p.id} ({p.name}, concurrency {p.concurrency})"


def tail_markdown(analysis: Analysis) -> list[str]:
    found, short = attributions(analysis)
    if not found and not short:
        return []
    lines = ["## TPOT tail attribution", "", TAIL_NOTE, ""]
    for p, att in found:
        lines += [f"### {tail_title(p)}", "", "| " + " | ".join(tail.HEADER) + " |",
                  "|---|" + "---:|" * (len(tail.HEADER) - 1)]
        lines += ["| " + " | ".join(cells) + " |" for cells in tail.table_rows(att)]
        lines += ["", att.sentence(), *([att.ttft.sentence()] if att.ttft else []), ""]
    lines += [f"- {line}" for line in short]
    return lines + ([""] if short else [])


def choice_text(a: AtConcurrency, draft: str) -> str:
    """What to deploy for ``draft`` at one concurrency in words (``speedup_model.recommend``)."""
    return a.choices[draft].sentence()


def findings(a: AtConcurrency) -> list[str]:
    """What one concurrency's table says, in sentences."""
    lines = []
    several = len(a.choices) > 1
    for draft in a.choices:
        lines.append(f"best lookahead{f' ({draft})' if several else ''} by output throughput: {choice_text(a, draft)}")
    if several and a.pick is not None:
        lines.append(f"recommended over every draft: {a.pick.sentence()}")
    for r in a.rows:
        if r.comparison is not None and not r.point.scheduled:
            line = f"{r.point.name} against no speculation: {r.comparison.text()}: {r.comparison.sentence()}"
            if r.point.stop_verdict and r.point.stop_verdict != r.verdict:
                line += (f" (its measuring stopped on the verdict {r.point.stop_verdict}, taken among the points "
                         f"measured by then" + (": this comparison is among every point here, by the same rule)"
                                                if a.rule else ": this comparison looks once, at every run)"))
            lines.append(line)
    if a.best_by_acceptance is not None and a.fastest is not None and a.best_by_acceptance.id != a.fastest.id:
        lines.append(f"the longest acceptance ({a.best_by_acceptance.acceptance_length:.2f}, lookahead "
                     f"{a.best_by_acceptance.lookahead}) is not the fastest")
    for r in a.rows:
        if r.point.scheduled and r.point.output_throughput is not None:
            lines.append(schedule_verdict(a, r))
    for r in a.rows:
        if r.efficiency is not None and r.efficiency > 1.0 and not r.point.scheduled:
            lines.append(f"{r.point.name} measured above its bound (efficiency {100 * r.efficiency:.0f}%): a noisy "
                         f"measurement; measure again with more prompts or repeats before trusting this concurrency")
    for fit in a.fits.values():
        if fit.draft_cost is None or fit.best is None or fit.cost is None:
            continue
        cost = fit.cost
        c = f"{cost.c:.3f}" + (f" [{cost.c_low:.3f}, {cost.c_high:.3f}]" if cost.c_low is not None else "")
        model = f"model ({fit.draft}, {cost.model}): draft cost c = {c} target steps per speculative token"
        if cost.c0:
            model += f", fixed overhead c0 = {cost.c0:.3f} per step"
        if len(cost.aic) > 1:
            model += "; AIC " + ", ".join(f"{m}: {v:.1f}" for m, v in cost.aic.items())
        lines.append(model)
        if cost.residuals:
            lines.append("  residuals (measured - predicted speedup): "
                         + ", ".join(f"k={k} {v:+.3f}" for k, v in cost.residuals.items()))
        verdict_text = (f"predicted best lookahead {fit.best[0]} ({fit.best[1]:.2f}x)" if fit.best[1] > 1.0 else
                        f"predicted: no lookahead beats no speculation (best {fit.best[0]} at {fit.best[1]:.2f}x)")
        lines.append(f"  {verdict_text}")
        why = model_against_recommendation(a, fit)
        if why:
            lines.append(f"  {why}")
    return lines


def model_against_recommendation(a: AtConcurrency, fit: Fit) -> str | None:
    """The sentence that explains a model whose best lookahead is not the recommendation (None when
    they agree). The recommendation follows the measurements; the model explains them."""
    pick = a.choices.get(fit.draft)
    if fit.best is None or pick is None or pick.point is None:
        return None
    k_model = fit.best[0] if fit.best[1] > 1.0 else 0
    k_pick = pick.point.lookahead if pick.point.speculative else 0
    if k_model == k_pick:
        return None
    said = (f"the model's best lookahead ({k_model}, {fit.best[1]:.2f}x)" if k_model else
            "the model's answer (no lookahead beats no speculation)")
    head = f"{said} is not the recommendation ({pick.label}), which follows the measured runs"
    rival = (next((r.point for r in a.rows if r.point.draft == fit.draft and r.point.lookahead == k_model
                   and not r.point.scheduled), None) if k_model else a.baseline)
    name = label(rival, len(a.choices)) if rival is not None else None
    c = pick.against.get(name) if name is not None else None
    if c is None:
        return f"{head}: {'k=' + str(k_model) if k_model else 'no speculation'} was not measured here"
    if c.verdict == "faster":
        return f"{head}: {pick.label} measured faster than {name} with 95% confidence, so the model is off here"
    return (f"{head}: {pick.label} has the higher median, and the two are undecided ({c.settle(short=True)}); "
            f"the model, fitted to every lookahead's speedup, leans the other way")


def markdown(analysis: Analysis, images: dict[str, str] | None = None) -> str:
    lines = [f"**{analysis.verdict()}**", "",
             "speedup: output throughput over no speculation at the same concurrency; bound: the mean "
             "acceptance length (the speedup if drafting cost nothing); efficiency = speedup / bound; "
             "predicted: E(k) / (1 + c k) (or 1 + c0 + c k) with the fitted draft cost c; vs none: the verdict "
             "against no speculation (faster, slower or undecided).", "",
             method_line(analysis), ""]
    for a in analysis.at:
        header = columns()
        lines += [f"### {a.title}", "", "| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
        lines += ["| " + " | ".join(cells) + " |" for cells in rows(a)]
        lines += [""] + [f"- {line}" for line in findings(a)] + [""]
    stats = category_stats(analysis)
    if stats:
        lines += ["## acceptance by category", "", *categories.markdown(stats), ""]
    lines += tail_markdown(analysis)
    by_t = temperature_findings(analysis)
    if by_t:
        lines += ["## temperature", "", f"Each temperature is analysed on its own; the lookahead schedule comes from "
                  f"temperature {analysis.reference_temperature:g}.", "", *[f"- {line}" for line in by_t], ""]
    lines, schedules = lines + band_report.markdown(analysis), derive_all(analysis)
    if schedules:
        lines += ["### lookahead schedule", "", f"The recommended lookahead per measured concurrency, as batch-size "
                  f"bands (an undecided recommendation keeps its k and is marked); {SCHEDULE_NOTE}.", ""]
        for schedule in schedules:
            lines += ["| batch sizes | k | measured at concurrency |", "|---|---:|---|"]
            lines += [f"| {b.first}-{b.last} | {b.k} | {', '.join(str(c) for c in b.concurrencies)}"
                      f"{undecided(b.undecided)} |" for b in schedule.bands]
            lines += ["", f"deploy ({schedule.draft}): `{schedule.override()}`", ""]
    for title, path in (images or {}).items():
        lines += [f"![{title}]({path})", ""]
    return "\n".join(lines).rstrip() + "\n"


def _bar(value: float, top: float, width: int = 28) -> str:
    filled = round(width * max(0.0, value) / top) if top > 0 else 0
    return "█" * filled + "·" * (width - filled)


def render(console: Console, analysis: Analysis) -> None:
    """Tables per concurrency with throughput bars, then the verdict."""
    for a in analysis.at:
        drafts = ", ".join(a.fits)
        title = a.title + (f", draft {drafts}" if len(a.fits) == 1 else "")
        table = Table(title=escape(f"{title} (TPOT, TTFT: mean ms; model: predicted speedup)"),
                      title_justify="left", padding=(0, 1))
        for i, col in enumerate(columns(short=True)):
            table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
        for cells in rows(a, short=True):
            table.add_row(*(Text(cell) for cell in cells))
        console.print(table)
        points = a.points
        top = max((p.output_throughput or 0.0 for p in points), default=0.0)
        width = max((len(short_name(p, a)) for p in points), default=0)
        for p in points:
            value = p.output_throughput or 0.0
            mark = ""
            if a.best is not None and p.id == a.best.id:
                mark = " <- recommended" + ("" if a.pick is None or a.pick.decided else " (undecided)")
            console.print(f"  {short_name(p, a):<{width}} {_bar(value, top)} {value:8.1f} tok/s{mark}",
                          markup=False, highlight=False)
        for line in findings(a):
            console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
        console.print()
    stats = category_stats(analysis)
    if stats:
        categories.render(console, stats)
    for p, att in attributions(analysis)[0]:
        console.print(f"TPOT tail of {tail_title(p)}: {att.sentence()}", markup=False, highlight=False, soft_wrap=True)
    for line in [*temperature_findings(analysis), *band_report.lines(analysis)]:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.print(Text(analysis.verdict(), style="bold"), highlight=False, soft_wrap=True)
    console.print(method_line(analysis), markup=False, highlight=False, soft_wrap=True)
    for schedule in derive_all(analysis):
        for line in schedule_lines(schedule):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        console.print(f"  ({SCHEDULE_NOTE})", markup=False, highlight=False, soft_wrap=True)
