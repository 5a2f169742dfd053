"""A run directory's ``report.html`` (``analysis.page``), gathered from its records alone: the status,
the plan, a section for each step whose kind has one (its ``page_part``: a sweep's points analysed
again from their records, as ``report`` does, with the plots it wrote; a capacity step's searches),
the reports and comparisons the run kept, the groups' job records, host.json and environment.json.
Written at the end of a run, by ``llama4spec report`` and after a launcher's groups are merged.

Everything read is a record checked as ``report`` checks it (``merge.load``, ``merge.collect``);
what the page shows of the records is redacted once more with the run's secrets.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from llama4spec.engine.secrets import redact
from llama4spec.errors import UserError
from llama4spec.files import Expect, Unreadable, number, plain, read_bytes, write_atomic
from llama4spec.runbook import colocation, merge, steps
from llama4spec.runbook.rundir import Measured
from llama4spec.analysis import page as html_page

PAGE = "report.html"
PLOT = Expect("plot", "rebuild it with: llama4spec report RUN_DIR", 16 << 20)
CELL = 2000  # the most characters of one value the provenance tables show


traits = steps.traits_of  # a plan.json step's traits by its kind's name (none for a kind there is not)


def target(run_dir: Path) -> Path:
    """Where a run directory's page goes; UserError when something other than a file is there."""
    path = Path(run_dir) / PAGE
    if path.is_dir() and not path.is_symlink():
        raise UserError(f"{plain(str(path))}: is a directory, not a report page; remove or rename it so that the "
                        f"report can be written there")
    if path.exists() and not path.is_file():
        raise UserError(f"{plain(str(path))}: is not a regular file (a device, pipe or socket); remove it so that "
                        f"the report can be written there")
    return path


def write(run_dir: Path, secrets: Iterable[str] = ()) -> Path:
    """``report.html`` of ``run_dir``, written whole; returns its path."""
    path = target(run_dir)
    write_atomic(path, html_page.html(gather(run_dir, secrets)))
    return path


def gather(run_dir: Path, secrets: Iterable[str] = ()) -> html_page.RunPage:
    """What the page shows, from the run directory's records."""
    source = merge.load(Path(run_dir))
    secrets = tuple(secrets)
    status = source.status
    kinds = source.kinds()
    merging = {sid for sid, k in kinds.items() if traits(k).merges and not traits(k).expands}
    page = html_page.RunPage(*redact(
        [_text(status.get("runbook"), "run"), _text(status.get("status"), "unknown"), _text(status.get("description")),
         _text(status.get("started")), _text(status.get("finished") or status.get("rebuilt"))], secrets))
    page.steps = redact(_steps(status), secrets)
    read = Read([source], secrets)
    shown = set()
    for step in source.plan:  # a section of its own: each kind that has one adds it (a sweep's, a capacity step's)
        of = steps.named(step.get("kind"))
        if of is not None and of.page_part is not None:
            of.page_part(read, step, page)
            shown.add(str(step["id"]))
    comparisons = status.get("comparisons") or {}
    page.comparisons = redact({cid: text for cid, text in comparisons.items() if cid in merging}, secrets)
    page.reports = [_report(source.dir, cid, redact(_lines(text), secrets))
                    for cid, text in comparisons.items()
                    if isinstance(cid, str) and cid not in shown and traits(kinds.get(cid)).expands
                    and traits(kinds.get(cid)).merges]
    page.groups = _groups(source.dir)
    page.provenance = _provenance(source.dir, status, secrets)
    page.commands = redact([(str(s["id"]), _command(s.get("argv"))) for s in source.plan if s.get("argv")
                            and (traits(s.get("kind")).starts_engine or traits(s.get("kind")).benchmarks)], secrets)
    notes = status.get("notes") or []
    page.notes = redact([_text(n) for n in notes if isinstance(n, str)], secrets)
    return page


@dataclass(frozen=True)
class Read:
    """The run directory read back for its page (``spec.ReadBack``), with the run's secrets: what a
    kind's ``page_part`` reads its records through."""

    sources: list[merge.Source]
    secrets: tuple[str, ...]

    def collect(self, ids: list[str], problems: dict[str, str] | None = None) -> dict[str, Measured]:
        return merge.collect(self.sources, ids, problems)

    @staticmethod
    def figure(title: str, path: Path) -> html_page.Figure:
        return _figure(title, path)


def _text(value: Any, default: str = "") -> str:
    return plain(value, CELL) if isinstance(value, str) else default


REPORT_LINES = 400  # the most lines of a kept report the page shows


def _lines(value: Any) -> str:
    """A kept report's text, line by line as a record's text may be shown, bounded."""
    lines = value.splitlines() if isinstance(value, str) else []
    return "\n".join(plain(line, CELL) for line in lines[:REPORT_LINES])


def _report(run_dir: Path, sid: str, text: str) -> html_page.ReportPart:
    """A merging step without a section of its own (a break-even map): the report it kept and every
    plot it wrote in its directory (read bounded)."""
    step_dir = run_dir / sid
    paths = sorted(step_dir.glob("*.png")) if step_dir.is_dir() else []
    return html_page.ReportPart(sid, text, [_figure(path.stem, path) for path in paths])


def _steps(status: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for e in status.get("steps") or []:
        secs = e.get("seconds")
        secs = "" if number(secs) is None else f"{number(secs):.1f}"
        state = _text(e.get("status"), "?") + (" (earlier run)" if e.get("resumed") is True else "")
        rows.append([str(e["id"]), _text(e.get("kind")), state, secs, _text(e.get("error") or e.get("reason"))])
    return rows


def _figure(title: str, path: Path) -> html_page.Figure:
    """A plot a step wrote (its PNG read bounded), or why it is not shown."""
    try:
        return html_page.Figure(title, read_bytes(path, PLOT))
    except Unreadable as err:
        return html_page.Figure(title, None, note=str(err))


def _groups(run_dir: Path) -> list[list[str]]:
    """Where each group ran (its job.json): node, span, and the groups beside it there."""
    spans = colocation.read_spans(run_dir)
    beside = colocation.colocated(spans)
    stamp = lambda t: time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))  # noqa: E731
    return [[s.group, plain(s.node, 200), stamp(s.start), stamp(s.end), ", ".join(beside.get(s.group, ())) or "alone"]
            for s in spans]


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return plain(text, CELL)


def _rows(data: Any) -> list[list[str]]:
    """A mapping's items as [key, value] rows (nested values as JSON)."""
    return [[plain(str(k), 200), _cell(v)] for k, v in data.items()] if isinstance(data, dict) else []


def _provenance(run_dir: Path, status: Mapping[str, Any], secrets: tuple[str, ...]) -> list[html_page.Table]:
    """Versions, host, models, the command and the recorded environment, redacted."""
    from llama4spec.records.host import environment_or_problem, host_or_problem

    record, host_problem = host_or_problem(run_dir / "host.json")  # each through its model
    env_record, env_problem = environment_or_problem(run_dir / "environment.json")
    host = record.model_dump(exclude_unset=True) if record is not None else {}
    env = dict(env_record.root) if env_record is not None else None
    command = {"runbook": status.get("runbook_path") or status.get("runbook"),
               "overrides": " ".join(str(o) for o in status.get("overrides") or [] if isinstance(o, str)) or None,
               "run directory": str(run_dir), "merged from": status.get("merged_from")}
    tables = [("versions", host.get("versions")), ("host", host.get("host")), ("models", host.get("models")),
              ("command", {k: v for k, v in command.items() if v}), ("environment", env)]
    out = [html_page.Table(title, ["name", "value"], _rows(redact(data, secrets)), [False, False])
           for title, data in tables if _rows(data)]
    for problem in (host_problem, env_problem):
        if problem:
            out.append(html_page.Table("unreadable", ["record", "why"], [["provenance", plain(problem, CELL)]],
                                       [False, False]))
    return out


def _command(argv: Any) -> str:
    return plain(shlex.join(str(a) for a in argv), CELL * 4) if isinstance(argv, list) else ""
