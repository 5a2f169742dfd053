"""A run's ``report.html``: one self-contained page (pure: data in, HTML text out).

The run's verdicts first, then the sections the step kinds add (``Section``: a class per type,
registered by its name by the feature that defines it, with its partial template: a sweep's tables
and plots, a capacity step's searches; plots are PNG, inline as ``data:`` URIs), the reports kept,
the comparisons, where the groups ran, and provenance. Nothing is loaded from anywhere else: no script,
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
from typing import Any, ClassVar


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
    sections: list[Section] = field(default_factory=list)  # what the step kinds' page parts add (``register``)
    reports: list[ReportPart] = field(default_factory=list)
    comparisons: Mapping[str, str] = field(default_factory=dict)  # compare step id -> its Markdown table
    groups: list[list[str]] = field(default_factory=list)  # group, node, started, finished, beside
    provenance: list[Table] = field(default_factory=list)
    commands: list[tuple[str, str]] = field(default_factory=list)  # step id -> its command line
    notes: list[str] = field(default_factory=list)
    stated: list[str] = field(default_factory=list)  # verdicts a kind's page part adds (step id: sentence)
    lead: list[str] = field(default_factory=list)  # a kind's answer in one sentence: first among the verdicts


# -- the sections: one class per type, registered by its name -----------------------------------------

class Section:
    """One section of the page that a step kind adds (its ``page_part``): a subclass per type of
    section, registered by its name (``register``) from the feature that defines it, frozen once built.
    It shows itself through its partial template (``template`` in ``package``'s ``templates/``,
    rendered with its ``view()`` as ``s``) and adds ``verdicts()`` to the page's verdicts. The page's
    sections stand in ``order`` of their types (lower first), each type's in the order they were added."""

    kind: ClassVar[str]  # the type's name: the registry's key
    order: ClassVar[int]  # where the type's sections stand among the others
    package: ClassVar[str]  # the package whose templates/ holds its partial
    template: ClassVar[str]  # the partial's file name there
    id: str  # the step's id

    @property
    def title(self) -> str:
        """Its heading."""
        return self.id

    def view(self) -> dict[str, Any]:
        """What its partial shows (text cells, tables, figures)."""
        raise NotImplementedError

    def verdicts(self) -> list[str]:
        """Its lines among the page's verdicts (after the run's status, before the comparisons)."""
        return []


SECTIONS: dict[str, type[Section]] = {}  # type name -> its class


def register(cls: type[Section]) -> type[Section]:
    """A section type, registered by its name (a class decorator)."""
    SECTIONS[cls.kind] = cls
    return cls


def ordered(page: RunPage) -> list[Section]:
    """The page's sections as they stand on it: by their types' order, then as added."""
    return sorted(page.sections, key=lambda s: s.order)

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
    section's (a sweep's answer, a capacity step's), the comparisons, what kinds state, each failed step."""
    lines = [*page.lead, f"run {page.status}" + (f", started {page.started}" if page.started else "")
             + (f", finished {page.finished}" if page.finished else "")]
    for section in ordered(page):
        lines += section.verdicts()
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

    sections = ordered(page)
    parts = {k: jinja2.PackageLoader(SECTIONS[k].package, "templates") for k in dict.fromkeys(x.kind for x in sections)}
    env = jinja2.Environment(loader=jinja2.ChoiceLoader([jinja2.PackageLoader("llama4spec.analysis", "templates"),
                                                         jinja2.PrefixLoader(parts)]), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    template = env.get_template("report.html.j2")
    comparisons = [(cid, markdown_table(text), text) for cid, text in page.comparisons.items()]
    shown = [(f"{x.kind}/{SECTIONS[x.kind].template}", x.view()) for x in sections]
    return template.render(page=page, verdicts=verdicts(page), sections=shown, comparisons=comparisons,
                           script=SORT_SCRIPT, script_hash=script_hash())
