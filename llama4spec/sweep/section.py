"""A sweep's section of report.html (``analysis.page.Section``, registered as ``sweep``): its
tables with their intervals and stop reasons, its plots, categories, TPOT tails, lookahead schedule,
temperature findings, where its points ran, and its answers among the page's verdicts. Built by its
``page_part`` (``sweep.report``); shown by ``templates/sweep.html.j2``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

from llama4spec.analysis import categories, tail
from llama4spec.sweep import tables as render
from llama4spec.stats.speedup_model import temperature_findings
from llama4spec.stats.speedup_results import Analysis, AtConcurrency
from llama4spec.analysis.page import Figure, Section, Table, register
from llama4spec.sweep.schedule_fit import derive_all


@register
@dataclass(frozen=True)
class SweepSection(Section):
    """One sweep step of the run: its analysis and what its records add to it."""

    kind: ClassVar[str] = "sweep"
    order: ClassVar[int] = 10
    package: ClassVar[str] = "llama4spec.sweep"
    template: ClassVar[str] = "sweep.html.j2"

    id: str
    analysis: Analysis
    figures: list[Figure] = field(default_factory=list)
    stops: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # point id -> record.stop (repeats: auto)
    not_measured: Mapping[str, str] = field(default_factory=dict)  # point id -> why it has no record
    beside: Mapping[str, Sequence[str]] = field(default_factory=dict)  # point id -> the groups beside its own
    notes: list[str] = field(default_factory=list)  # the design, co-location warnings

    @property
    def title(self) -> str:
        return f"Sweep {self.id}"

    def view(self) -> dict[str, Any]:
        return sweep_view(self)

    def verdicts(self) -> list[str]:
        """Its answer, each concurrency's recommendation, how many points were not measured."""
        lines = [f"{self.id}: {self.analysis.verdict()}"]
        for a in self.analysis.at:
            for draft in a.choices:
                lines.append(f"{self.id}, {a.title}: recommended{f' ({draft})' if len(a.choices) > 1 else ''}: "
                             f"{render.choice_text(a, draft)}")
        if self.not_measured:
            lines.append(f"{self.id}: {len(self.not_measured)} points not measured (listed below)")
        return lines


# -- the view: text cells and sentences ---------------------------------------------------------------

def stop_text(stop: Mapping[str, Any] | None) -> str:
    """Why a point measured until decided stopped: ``resolved after 4 runs (faster)``."""
    if not stop:
        return "-"
    text = f"{stop.get('reason', '?')} after {stop.get('runs', '?')} runs"
    starts = stop.get("starts")
    if isinstance(starts, int) and starts > 1:
        text += f" of {starts} server starts"
    return text + (f" ({stop['verdict']})" if stop.get("verdict") else "")


def concurrency_table(a: AtConcurrency, stops: Mapping[str, Mapping[str, Any]]) -> Table:
    """One concurrency's table (``render.rows``: medians with 95% intervals, the speedup's interval
    and verdict), with the stop reason of each point measured until decided."""
    header, cells = render.columns(), render.rows(a)
    points = a.points
    if any(p.id in stops for p in points):
        header.append("stop")
        cells = [[*row, stop_text(stops.get(p.id))] for row, p in zip(cells, points)]
    header.insert(1, "point")
    cells = [[row[0], p.id, *row[1:]] for row, p in zip(cells, points)]
    return Table(a.title, header, cells, [False, False] + [True] * (len(header) - 2))


def schedule_tables(analysis: Analysis) -> list[tuple[Table, str]]:
    """Each derived lookahead schedule's bands, with the override that deploys it."""
    out = []
    for s in derive_all(analysis):
        rows = [[f"{b.first}-{b.last}", str(b.k), ", ".join(map(str, b.concurrencies)),
                 ", ".join(map(str, b.undecided)) or "-"] for b in s.bands]
        out.append((Table(f"lookahead schedule for {s.draft}", ["batch sizes", "k", "measured at concurrency",
                                                                 "undecided at"], rows, [False, True, False, False]),
                    s.override()))
    return out


def category_tables(analysis: Analysis) -> tuple[list[Table], list[str]]:
    """The acceptance-by-category tables and the sentences under them."""
    stats = render.category_stats(analysis)
    tables = [Table(title, header, rows, [False] + [True] * (len(header) - 1))
              for title, header, rows in categories.tables(stats)]
    least = categories.least_line(stats) if stats else None
    return tables, ([least] if least else []) + [f"warning: {w}" for w in categories.oversampled(stats)]


def tail_tables(analysis: Analysis) -> tuple[list[tuple[Table, list[str]]], list[str]]:
    """Each attributed point's TPOT tail table with its sentences, and the points too short for one."""
    found, short = render.attributions(analysis)
    tables = [(Table(render.tail_title(p), list(tail.HEADER), tail.table_rows(att), [False] + [True] * 7),
               [att.sentence(), *([att.ttft.sentence()] if att.ttft else [])]) for p, att in found]
    return tables, short


def colocation_table(part: SweepSection) -> Table | None:
    if not part.beside:
        return None
    rows = [[pid, ", ".join(groups) or "alone"] for pid, groups in part.beside.items()]
    return Table("where each point's group ran: the groups beside it on its node", ["point", "beside"], rows,
                 [False, False])


def sweep_view(part: SweepSection) -> dict[str, Any]:
    a = part.analysis
    tables, lines = category_tables(a)
    tails, tails_short = tail_tables(a)
    return {
        "id": part.id, "title": part.title, "verdict": a.verdict(), "method": render.method_line(a),
        "at": [{"table": concurrency_table(c, part.stops), "findings": render.findings(c)} for c in a.at],
        "figures": part.figures, "stops": [[pid, stop_text(s)] for pid, s in part.stops.items()],
        "not_measured": list(part.not_measured.items()), "categories": tables, "category_lines": lines,
        "schedules": schedule_tables(a), "temperature": temperature_findings(a),
        "reference_temperature": f"{a.reference_temperature:g}", "colocation": colocation_table(part),
        "notes": part.notes, "tails": tails, "tails_short": tails_short, "tail_note": render.TAIL_NOTE,
    }
