"""analysis.categories: the category x position tables, the least-paying line, oversampling warnings."""

from __future__ import annotations

from rich.console import Console

from llama4spec.results.acceptance import AcceptanceCounters
from llama4spec.analysis.categories import CategoryStat, least_paying, markdown, oversampled, render


def stat(category: str, length: float | None, rates=(0.5, 0.4), *, draft: str = "eagle", k: int = 2,
         concurrency: int | None = None, prompts: int | None = 10, speedup: float | None = None) -> CategoryStat:
    return CategoryStat(category, draft, k, concurrency, prompts, length, tuple(rates), speedup)


def test_markdown_has_one_table_per_draft_lookahead_and_concurrency() -> None:
    stats = [stat("math", 1.9, (0.5, 0.4), concurrency=4), stat("writing", 2.6, (0.9, 0.7), concurrency=4),
             stat("math", 1.5, (0.3, 0.2), concurrency=16)]
    lines = markdown(stats)
    assert lines[:6] == [
        "### acceptance by category: eagle k=2 concurrency 4", "",
        "| category | prompts | acceptance length | pos 0 | pos 1 |",
        "|---|---:|---:|---:|---:|",
        "| math | 10 | 1.900 | 0.500 | 0.400 |",
        "| writing | 10 | 2.600 | 0.900 | 0.700 |",
    ]
    assert "### acceptance by category: eagle k=2 concurrency 16" in lines
    assert "speculation pays least on: math (lowest acceptance length)" in lines


def test_offline_tables_have_no_concurrency_and_show_speedup_when_known() -> None:
    lines = markdown([stat("a", 2.0, speedup=1.5), stat("b", 2.5, speedup=1.25), stat("c", 3.0, speedup=2.0)])
    assert lines[0] == "### acceptance by category: eagle k=2"
    assert lines[2] == "| category | prompts | acceptance length | pos 0 | pos 1 | speedup |"
    assert "| a | 10 | 2.000 | 0.500 | 0.400 | 1.50x |" in lines
    # by speedup, not by acceptance length: b pays least although a accepts least
    assert "speculation pays least on: b, a (lowest speedup)" in lines


def test_least_paying_by_speedup_else_acceptance_length() -> None:
    with_speedup = [stat("a", 2.0, speedup=1.5), stat("b", 2.5, speedup=1.1), stat("c", 3.0, speedup=2.0)]
    assert least_paying(with_speedup) == ["b", "a"]
    assert least_paying(with_speedup, 1) == ["b"]
    partial = [stat("a", 2.0, speedup=1.5), stat("b", 2.5), stat("c", 1.2)]
    assert least_paying(partial) == ["c", "a"]  # a speedup missing: acceptance length for all
    # a category's worst point counts (the same category at two concurrencies)
    two = [stat("a", 2.0, concurrency=1), stat("a", 1.0, concurrency=4), stat("b", 1.5, concurrency=1)]
    assert least_paying(two, 1) == ["a"]
    assert least_paying([]) == []
    assert least_paying([stat("a", None), stat("b", 2.0)]) == ["b"]  # unknown length: not ranked


def test_two_categories_name_one_not_both() -> None:
    lines = markdown([stat("clean_start", 2.5), stat("early_miss", 2.4)])
    assert "speculation pays least on: early_miss (lowest acceptance length)" in lines
    assert not any(line.startswith("speculation pays least") for line in markdown([stat("only", 2.0)]))


def test_oversampled_warns_when_concurrency_exceeds_prompts() -> None:
    stats = [stat("math", 2.0, concurrency=16, prompts=10), stat("stem", 2.0, concurrency=8, prompts=10),
             stat("offline", 2.0, concurrency=None, prompts=2), stat("unknown", 2.0, concurrency=64, prompts=None)]
    warnings = oversampled(stats)
    assert len(warnings) == 1
    assert warnings[0].startswith("math (eagle k=2): concurrency 16 > its 10 prompts")
    assert "oversamples" in warnings[0]
    assert f"- warning: {warnings[0]}" in markdown(stats)


def test_rows_with_fewer_positions_are_padded() -> None:
    lines = markdown([stat("a", 2.0, (0.5, 0.4, 0.3), k=3), stat("b", None, (), k=3, prompts=None)])
    assert "| b | - | - | - | - | - |" in lines


def test_render_prints_the_same_table() -> None:
    console = Console(record=True, width=120)
    render(console, [stat("[math]", 1.9, concurrency=16, prompts=10), stat("writing", 2.6, concurrency=16)])
    text = console.export_text()
    assert "acceptance by category: eagle k=2 concurrency 16" in text
    assert "[math]" in text and "1.900" in text and "0.500" in text  # markup in a name printed as text
    assert "speculation pays least on: [math]" in text
    assert "warning: [math] (eagle k=2): concurrency 16 > its 10 prompts" in text


