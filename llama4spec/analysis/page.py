"""A run's ``report.html``: one self-contained page (pure: data in, HTML text out).

The run's verdicts first, then each sweep's tables with their intervals and stop reasons, its plots
(PNG, inline as ``data:`` URIs), categories, lookahead schedule and temperature findings, where the
groups ran, the comparisons, and provenance. Nothing is loaded from anywhere else: no script,
stylesheet, font or image outside the file, and a Content-Security-Policy that forbids them (the one
inline script, which sorts a table when its header is clicked, is allowed by its hash). Every
verdict, table and figure is in the HTML itself; the script only reorders rows.

Rendered by Jinja2 with autoescape on (``templates/report.html.j2``): every text from a run (labels,
step ids, paths, commands) is escaped, so ``<script>`` in a label is shown, never run.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from llama4spec.analysis import capacity_report, categories, sweep_tables as render, tail
from llama4spec.analysis.model import Analysis, AtConcurrency, temperature_findings
from llama4spec.analysis.schedule import derive_all

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# Sorts a table by the clicked column: numbers by their leading value, text otherwise.
SORT_SCRIPT = """\
document.querySelectorAll("table.sortable th").forEach(function (th, i) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex, up = th.dataset.dir !== "up";
    var key = function (tr) { var t = tr.cells[col].textContent, n = parseFloat(t); return isNaN(n) ? t : n; };
    Array.from(body.rows).sort(function (a, b) { var x = key(a), y = key(b);
      return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1); }).forEach(function (tr) { body.appendChild(tr); });
    th.dataset.dir = up ? "up" : "down";
  });
});
"""


@dataclass
class Table:
    """A table of text cells (``numeric``: which columns are right-aligned)."""

    caption: str
    header: list[str]
    rows: list[list[str]]
    numeric: list[bool] = field(default_factory=list)


@dataclass
class Figure:
    """A plot: its title, the PNG's bytes (None: not there, with ``note`` saying why), the series it draws."""

    title: str
    png: bytes | None
    series: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def src(self) -> str | None:
        """The image as a data: URI (only a PNG: anything else is left out)."""
        if self.png is None or not self.png.startswith(PNG_MAGIC):
            return None
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


@dataclass
class SweepPart:
    """One sweep step of the run: its analysis and what its records add to it."""

    id: str
    analysis: Analysis
    figures: list[Figure] = field(default_factory=list)
    stops: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # point id -> record.stop (repeats: auto)
    not_measured: Mapping[str, str] = field(default_factory=dict)  # point id -> why it has no record
    beside: Mapping[str, Sequence[str]] = field(default_factory=dict)  # point id -> the groups beside its own
    notes: list[str] = field(default_factory=list)  # the design, co-location warnings


@dataclass
class CapacityPart:
    """One capacity step of the run: its searches analysed again (capacity.json's record), the SLO
    they recorded, each setting's latency-throughput plot."""

    id: str
    record: Mapping[str, Any]
    figures: list[Figure] = field(default_factory=list)


@dataclass
class ReportPart:
    """A merging step with no section of its own (a break-even map): the report it kept, as written,
    and the plots it wrote."""

    id: str
    text: str
    figures: list[Figure] = field(default_factory=list)

    @property
    def lines(self) -> str:
        """The report's text without its Markdown image links (the plots are shown as images)."""
        return "\n".join(line for line in self.text.splitlines() if not line.lstrip().startswith("!["))


@dataclass
class RunPage:
    """Everything the page shows, gathered from a run directory's records."""

    name: str
    status: str
    description: str = ""
    started: str = ""
    finished: str = ""
    steps: list[list[str]] = field(default_factory=list)  # id, kind, status, seconds, why
    sweeps: list[SweepPart] = field(default_factory=list)
    capacities: list[CapacityPart] = field(default_factory=list)
    reports: list[ReportPart] = field(default_factory=list)
    comparisons: Mapping[str, str] = field(default_factory=dict)  # compare step id -> its Markdown table
    groups: list[list[str]] = field(default_factory=list)  # group, node, started, finished, beside
    provenance: list[Table] = field(default_factory=list)
    commands: list[tuple[str, str]] = field(default_factory=list)  # step id -> its command line
    notes: list[str] = field(default_factory=list)
    stated: list[str] = field(default_factory=list)  # verdicts a kind's page part adds (step id: sentence)
    lead: list[str] = field(default_factory=list)  # a kind's answer in one sentence: first among the verdicts


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


def colocation_table(part: SweepPart) -> Table | None:
    if not part.beside:
        return None
    rows = [[pid, ", ".join(groups) or "alone"] for pid, groups in part.beside.items()]
    return Table("where each point's group ran: the groups beside it on its node", ["point", "beside"], rows,
                 [False, False])


def sweep_view(part: SweepPart) -> dict[str, Any]:
    a = part.analysis
    tables, lines = category_tables(a)
    tails, tails_short = tail_tables(a)
    return {
        "id": part.id, "verdict": a.verdict(), "method": render.method_line(a),
        "at": [{"table": concurrency_table(c, part.stops), "findings": render.findings(c)} for c in a.at],
        "figures": part.figures, "stops": [[pid, stop_text(s)] for pid, s in part.stops.items()],
        "not_measured": list(part.not_measured.items()), "categories": tables, "category_lines": lines,
        "schedules": schedule_tables(a), "temperature": temperature_findings(a),
        "reference_temperature": f"{a.reference_temperature:g}", "colocation": colocation_table(part),
        "notes": part.notes, "tails": tails, "tails_short": tails_short, "tail_note": render.TAIL_NOTE,
    }


def capacity_view(part: CapacityPart) -> dict[str, Any]:
    """A capacity step's section: the headline, the SLO, the table, each setting in words, the plots."""
    r = part.record
    table = Table(f"request capacity under {r['slo']}", list(capacity_report.PAGE_HEADER),
                  capacity_report.page_rows(r), [False, True, True, False, False, True, True, True])
    lines = [capacity_report.method_words(r)]
    for s in r["settings"].values():
        lines.append(f"{s['sentence']}; error bound {s['error_bound']:.2g}")
        lines += [note for note in s["notes"] if s.get("search") == "fit" and note not in s["sentence"]]
    lines += (r.get("demand") or {}).get("lines", [])
    return {"id": part.id, "headline": r.get("headline") or "", "slo": capacity_report.slo_lines(
        r.get("thresholds") or {}, r.get("resolved") or {}), "table": table, "lines": lines,
        "missing": list((r.get("missing") or {}).items()), "figures": part.figures,
        "warnings": [f"warning: {w}" for w in r.get("warnings") or []]}


def capacity_verdict(part: CapacityPart) -> str:
    """A capacity step's answer in one line: its headline, else each setting's capacity."""
    r = part.record
    if r.get("headline"):
        return f"{part.id}: {r['headline']}"
    if r["settings"]:
        return f"{part.id}: " + "; ".join(s["sentence"] for s in r["settings"].values())
    return f"{part.id}: no request capacity measured"


def markdown_table(text: str) -> Table | None:
    """A Markdown table (``compare``'s) as a Table; None when ``text`` holds none."""
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("|")]
    if len(lines) < 2:
        return None
    split = lambda line: [c.strip().replace("**", "") for c in line.strip("|").split("|")]  # noqa: E731
    header, rows = split(lines[0]), [split(line) for line in lines[2:]]
    if any(len(r) != len(header) for r in rows):
        return None
    return Table("", header, rows, [False] + [True] * (len(header) - 1))


def verdicts(page: RunPage) -> list[str]:
    """The run's verdicts in sentences: the answers kinds put first (``lead``), its status, each
    sweep's answer, each failed step."""
    lines = [*page.lead, f"run {page.status}" + (f", started {page.started}" if page.started else "")
             + (f", finished {page.finished}" if page.finished else "")]
    for part in page.sweeps:
        lines.append(f"{part.id}: {part.analysis.verdict()}")
        for a in part.analysis.at:
            for draft in a.choices:
                lines.append(f"{part.id}, {a.title}: recommended{f' ({draft})' if len(a.choices) > 1 else ''}: "
                             f"{render.choice_text(a, draft)}")
        if part.not_measured:
            lines.append(f"{part.id}: {len(part.not_measured)} points not measured (listed below)")
    for part in page.capacities:
        lines.append(capacity_verdict(part))
        if part.record.get("missing"):
            lines.append(f"{part.id}: {len(part.record['missing'])} settings not measured (listed below)")
    for cid, text in page.comparisons.items():
        table = markdown_table(text)
        row = next((r for r in table.rows if r[0].startswith("output throughput")), None) if table else None
        if row is not None and len(table.header) >= 4:
            lines.append(f"{cid}: output throughput {row[2]} against {row[1]}: {row[3]} "
                         f"({table.header[2]} over {table.header[1]})")
    lines += page.stated
    for sid, _, status, _, why in page.steps:
        if status == "failed":
            lines.append(f"step {sid} failed: {why or 'no reason recorded'}")
    return lines


def script_hash(script: str = SORT_SCRIPT) -> str:
    """The CSP source that allows exactly this inline script."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii") + "'"


def html(page: RunPage) -> str:
    """The page as one HTML document."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("llama4spec.analysis", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    template = env.get_template("report.html.j2")
    comparisons = [(cid, markdown_table(text), text) for cid, text in page.comparisons.items()]
    return template.render(page=page, verdicts=verdicts(page), sweeps=[sweep_view(p) for p in page.sweeps],
                           capacities=[capacity_view(p) for p in page.capacities],
                           comparisons=comparisons, script=SORT_SCRIPT, script_hash=script_hash())
