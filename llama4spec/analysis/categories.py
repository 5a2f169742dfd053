"""Acceptance by prompt category (pure): one row per category, one column per draft position,
a table per (draft, lookahead, concurrency), and the categories where speculation pays least.

Offline runs give one ``CategoryStat`` per category (``concurrency`` None); a sweep gives one per
category point. Renderers take a Console and return nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table


@dataclass(frozen=True)
class CategoryStat:
    category: str
    draft: str
    lookahead: int
    concurrency: int | None  # None offline
    prompts: int | None
    acceptance_length: float | None
    rates: tuple[float, ...]  # per position
    speedup: float | None = None  # over no speculation in the same category, when measured



Group = tuple[str, int, int | None]  # (draft, lookahead, concurrency)


def groups(stats: Sequence[CategoryStat]) -> dict[Group, list[CategoryStat]]:
    """The stats per (draft, lookahead, concurrency), in first-seen order; categories in given order."""
    out: dict[Group, list[CategoryStat]] = {}
    for s in stats:
        out.setdefault((s.draft, s.lookahead, s.concurrency), []).append(s)
    return out


def _title(group: Group) -> str:
    draft, k, concurrency = group
    return f"acceptance by category: {draft} k={k}" + (f" concurrency {concurrency}" if concurrency is not None else "")


def _positions(rows: Sequence[CategoryStat]) -> int:
    return max((len(s.rates) for s in rows), default=0)


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _cells(s: CategoryStat, positions: int, with_speedup: bool) -> list[str]:
    rates = [f"{r:.3f}" for r in s.rates] + ["-"] * (positions - len(s.rates))
    cells = [s.category, "-" if s.prompts is None else str(s.prompts), _num(s.acceptance_length), *rates]
    if with_speedup:
        cells.append("-" if s.speedup is None else f"{s.speedup:.2f}x")
    return cells


def _header(positions: int, with_speedup: bool) -> list[str]:
    return ["category", "prompts", "acceptance length", *[f"pos {i}" for i in range(positions)]] + (
        ["speedup"] if with_speedup else [])


def least_paying(stats: Sequence[CategoryStat], n: int = 2) -> list[str]:
    """The ``n`` categories where speculation pays least: lowest speedup when every stat of a
    category has one, else lowest acceptance length (over all of a category's stats, the worst)."""
    by_cat: dict[str, list[CategoryStat]] = {}
    for s in stats:
        by_cat.setdefault(s.category, []).append(s)
    if not by_cat:
        return []
    use_speedup = all(s.speedup is not None for s in stats)

    def worst(rows: list[CategoryStat]) -> float:
        values = [(s.speedup if use_speedup else s.acceptance_length) for s in rows]
        known = [v for v in values if v is not None]
        return min(known) if known else float("inf")

    ranked = sorted(by_cat, key=lambda c: (worst(by_cat[c]), list(by_cat).index(c)))
    return [c for c in ranked if worst(by_cat[c]) != float("inf")][:n]


def _least_line(stats: Sequence[CategoryStat], n: int = 2) -> str | None:
    categories = len({s.category for s in stats})
    names = least_paying(stats, min(n, categories - 1))  # never every category
    if not names:
        return None
    by = "speedup" if all(s.speedup is not None for s in stats) else "acceptance length"
    return f"speculation pays least on: {', '.join(names)} (lowest {by})"


def oversampled(stats: Sequence[CategoryStat]) -> list[str]:
    """One warning per stat whose concurrency exceeds its prompts (the benchmark repeats prompts)."""
    return [
        f"{s.category} ({s.draft} k={s.lookahead}): concurrency {s.concurrency} > its {s.prompts} prompts: "
        f"the benchmark oversamples (repeats prompts); measure it at concurrency {s.prompts} or less"
        for s in stats
        if s.concurrency is not None and s.prompts is not None and s.concurrency > s.prompts
    ]


def tables(stats: Sequence[CategoryStat]) -> list[tuple[str, list[str], list[list[str]]]]:
    """The category x position tables as (title, header, rows of cells), one per draft, lookahead
    and concurrency (what ``markdown`` and ``render`` lay out, for other renderers)."""
    out = []
    for group, rows in groups(stats).items():
        positions, with_speedup = _positions(rows), any(s.speedup is not None for s in rows)
        out.append((_title(group), _header(positions, with_speedup), [_cells(s, positions, with_speedup) for s in rows]))
    return out


def least_line(stats: Sequence[CategoryStat]) -> str | None:
    """The categories where speculation pays least, in a sentence (None with one category)."""
    return _least_line(stats)


def markdown(stats: Sequence[CategoryStat]) -> list[str]:
    """The category x position tables (one per draft, lookahead and concurrency) as Markdown lines,
    then the categories where speculation pays least and any oversampling warnings."""
    lines: list[str] = []
    for group, rows in groups(stats).items():
        positions, with_speedup = _positions(rows), any(s.speedup is not None for s in rows)
        header = _header(positions, with_speedup)
        lines += [f"### {_title(group)}", "", "| " + " | ".join(header) + " |",
                  "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
        lines += ["| " + " | ".join(_cells(s, positions, with_speedup)) + " |" for s in rows]
        lines.append("")
    least = _least_line(stats)
    if least:
        lines += [least, ""]
    for warning in oversampled(stats):
        lines.append(f"- warning: {warning}")
    return lines


def render(console: Console, stats: Sequence[CategoryStat]) -> None:
    """The same tables as ``markdown``, as Rich tables."""
    for group, rows in groups(stats).items():
        positions, with_speedup = _positions(rows), any(s.speedup is not None for s in rows)
        table = Table(title=escape(_title(group)), title_justify="left")
        for i, name in enumerate(_header(positions, with_speedup)):
            table.add_column(name, justify="left" if i == 0 else "right")
        for s in rows:
            table.add_row(*(escape(c) for c in _cells(s, positions, with_speedup)))
        console.print(table)
    least = _least_line(stats)
    if least:
        console.print(escape(least), highlight=False)
    for warning in oversampled(stats):
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)
