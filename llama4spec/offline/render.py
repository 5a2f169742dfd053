"""Offline tables: acceptance statistics, the baseline comparison, the greedy check.
Renderers take a Console and return nothing."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def _bar(fraction: float, width: int = 30) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "·" * (width - filled)


def offline_stats(console: Console, stats, label: str) -> None:
    """The figures the original runbook printed by hand, as tables."""
    from rich.table import Table

    run = Table(title=escape(f"offline run: {label}"), show_header=False, title_justify="left")
    run.add_column("figure", style="bold")
    run.add_column("value", justify="right")
    run.add_row("total output tokens", _fmt(stats.total_num_output_tokens))
    run.add_row("wall time (s)", _fmt(stats.wall_time_s, 3))
    run.add_row("output tokens/s", _fmt(stats.output_tokens_per_s, 1))
    c = stats.counters
    if c is not None:
        run.add_row("drafts", _fmt(c.num_drafts))
        run.add_row("draft tokens", _fmt(c.num_draft_tokens))
        run.add_row("draft tokens per draft", _fmt(c.draft_tokens_per_draft, 3))
        run.add_row("accepted tokens", _fmt(c.num_accepted_tokens))
        run.add_row("mean acceptance length", _fmt(c.mean_acceptance_length, 3))
        run.add_row("acceptance rate (overall)", _fmt(c.acceptance_rate, 3))
    console.print(run)
    if c is None:
        return
    counts = (c.accepted_per_pos + [0] * stats.k)[: stats.k]
    if stats.scheduled:  # later positions are drafted only at some batch sizes: a rate per draft misleads
        pos = Table(title="accepted tokens by draft position (lookahead schedule: counts, not rates)",
                    title_justify="left")
        pos.add_column("position", justify="right")
        pos.add_column("accepted", justify="right")
        for i, count in enumerate(counts):
            pos.add_row(str(i), _fmt(count))
        console.print(pos)
        return
    pos = Table(title="acceptance by draft position", title_justify="left")
    pos.add_column("position", justify="right")
    pos.add_column("accepted", justify="right")
    pos.add_column("rate", justify="right")
    pos.add_column("", no_wrap=True)
    for i, (count, rate) in enumerate(zip(counts, c.rate_per_position(stats.k))):
        pos.add_row(str(i), _fmt(count), f"{rate:.3f}", _bar(rate))
    console.print(pos)


def offline_comparison(console: Console, spec, base, label: str) -> None:
    from rich.table import Table

    table = Table(title="speculation vs no draft (same prompts)", title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column(label, justify="right")
    table.add_column("no draft", justify="right")
    table.add_column("speedup", justify="right")
    s, b = spec.output_tokens_per_s, base.output_tokens_per_s
    table.add_row("output tokens", _fmt(spec.total_num_output_tokens), _fmt(base.total_num_output_tokens), "")
    table.add_row("wall time (s)", _fmt(spec.wall_time_s, 3), _fmt(base.wall_time_s, 3),
                  f"{base.wall_time_s / spec.wall_time_s:.2f}x" if spec.wall_time_s else "-")
    table.add_row("output tokens/s", _fmt(s, 1), _fmt(b, 1), f"{s / b:.2f}x" if s and b else "-")
    ml = spec.counters.mean_acceptance_length if spec.counters else None
    table.add_row("mean acceptance length", _fmt(ml, 3), "1.000", "")
    console.print(table)


def greedy_check(console: Console, diff, spec_ids, base_ids) -> None:
    if diff is None:
        console.print("[green]greedy outputs identical with and without speculation[/green] "
                      f"({len(spec_ids)} prompts)")
        return
    i, pos = diff
    a = spec_ids[i][pos] if pos < len(spec_ids[i]) else "end"
    b = base_ids[i][pos] if pos < len(base_ids[i]) else "end"
    console.print(f"[red]greedy outputs differ[/red]: prompt {i}, token {pos}: "
                  f"speculation gave {a}, no draft gave {b}")


def by_category(console: Console, stats) -> None:
    """Acceptance by prompt category: ``sweep.categories``' table (category x position)."""
    from llama4spec.sweep.categories import render

    render(console, stats)
