"""The one way to print text that comes from a file, a config or the command line: as text, never
as Rich markup, so a ``[/x]`` in a record prints as written instead of failing, and a crafted
string cannot style or hide what the terminal shows. Markup stays for the tool's own words
(``styled``: the parts that are the tool's carry a style, the values none)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text


def text(value: Any, style: str = "") -> Text:
    """``value`` as Rich text (a table's title or cell, a part of a line): its brackets as written."""
    return Text(str(value), style=style)


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line of parts, each plain text or (text, style): the values never read as markup."""
    return Text.assemble(*parts)


def say(console: Console, line: Any, style: str | None = None) -> None:
    """Print one line (or a ``Text``) as written: never markup, no highlighting, long lines not cut."""
    console.print(line, markup=False, highlight=False, soft_wrap=True, style=style)
