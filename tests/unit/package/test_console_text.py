"""Text from a file, a config or the command line reaches the terminal as text, never as Rich
markup (``llama4spec.console``): a scan of the package for the other way, a Rich call (print, a
table's title or cell, a status) given an f-string or a joined string that interpolates a value
that is neither escaped nor formatted as a number, without ``markup=False``. The sites left are
listed with what they interpolate, reviewed; a value that is a plain name or call (not an f-string)
is beyond what the scan sees."""

from __future__ import annotations

import ast
from pathlib import Path

from rich.console import Console

from llama4spec.console import say, styled, text

PACKAGE = Path(__file__).resolve().parents[3] / "llama4spec"
CALLS = {"print", "log", "rule", "add_row", "add_column", "Table", "status", "Panel"}

REVIEWED = {  # module:function -> what its interpolated values are
    "launch/show.py:show_groups": "the count of groups and the launcher's own words",
    "lossless/verdict_table.py:render": "the target and draft config names (files under conf/), numbers",
    "offline/display.py:async_note": "on/off words the tool computes",
    "offline/display.py:greedy_check": "counts, prompt indexes and token ids",
    "offline/display.py:by_temperature": "token positions",
    "preflight/__init__.py:gate": "a count of errors",
    "preflight/findings.py:sources": "the role (target or draft); the reference and the source are escaped",
    "preflight/findings.py:findings": "a finding's severity and rule, the doctor's own words; what it found is "
                                      "escaped; counts",
    "preflight/findings.py:memory_plan": "sizes, counts and the doctor's own words",
    "results/comparison.py:render_single": "an acceptance position",
}


def _escaped(value: ast.expr) -> bool:
    return isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", None)) == "escape"


def _markup_risk(arg: ast.expr) -> bool:
    if isinstance(arg, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) and v.format_spec is None and not _escaped(v.value)
                   for v in arg.values)
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, (ast.Add, ast.Mod)):
        return True
    return isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr in ("format", "join")


def _sites() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text()
        if "rich" not in source:
            continue
        tree = ast.parse(source)
        owner = {id(n): fn.name for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for n in ast.walk(fn)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
                continue
            if isinstance(node.func, ast.Name) and node.func.id == "print":
                continue  # the builtin: plain text
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            kwargs = {k.arg: k.value for k in node.keywords}
            if name not in CALLS or (isinstance(kwargs.get("markup"), ast.Constant) and kwargs["markup"].value is False):
                continue
            args = [*node.args, *(v for k, v in kwargs.items() if k in ("title", "caption", "status"))]
            if any(_markup_risk(a) for a in args):
                where = f"{path.relative_to(PACKAGE)}:{owner.get(id(node), '<module>')}"
                found.setdefault(where, []).append(node.lineno)
    return found


def test_no_rich_call_reads_an_interpolated_value_as_markup() -> None:
    found = _sites()
    new = {where: lines for where, lines in found.items() if where not in REVIEWED}
    assert not new, f"print these through llama4spec.console (say, text, styled) or escape them: {new}"
    assert not set(REVIEWED) - set(found), f"reviewed sites that no longer interpolate: {set(REVIEWED) - set(found)}"


def test_the_helper_prints_brackets_as_written() -> None:
    console = Console(record=True, width=100, file=open("/dev/null", "w"))
    say(console, "device [/x] [bold]not bold[/bold]")
    say(console, styled(("error:", "bold red"), " ", "[/x]"))
    console.print(text("[red]cell[/red]"))
    assert console.export_text().splitlines() == ["device [/x] [bold]not bold[/bold]", "error: [/x]",
                                                  "[red]cell[/red]"]
