"""Offline pieces that need no engine: output comparison, the no-draft config, the tables."""

from __future__ import annotations

from rich.console import Console

from llama4spec.offline import render as report
from llama4spec.config.compose import compose_config
from llama4spec.results.acceptance import AcceptanceCounters, RunStats
from llama4spec.offline.run import first_difference, without_draft


def test_first_difference():
    assert first_difference([[1, 2, 3], [4, 5]], [[1, 2, 3], [4, 5]]) is None
    assert first_difference([[1, 2, 3], [4, 5]], [[1, 2, 3], [4, 6]]) == (1, 1)
    assert first_difference([[1, 2, 3]], [[1, 2]]) == (0, 2)


def test_without_draft_keeps_everything_else():
    cfg = compose_config(["lookahead=5", "memory.max_num_seqs=8"]).cfg
    base = without_draft(cfg)
    assert base.draft.method is None and base.draft.model is None
    assert base.memory == cfg.memory and base.target == cfg.target and cfg.draft.method == "eagle"


def _render(stats: RunStats) -> str:
    console = Console(record=True, width=100)
    report.offline_stats(console, stats, "label")
    return console.export_text()


def test_tables_show_acceptance_only_with_a_draft():
    with_draft = _render(RunStats(120, AcceptanceCounters(10, 30, 24, [10, 8, 6]), k=3, wall_time_s=1.0))
    assert "acceptance by draft position" in with_draft and "mean acceptance length" in with_draft
    assert "0.800" in with_draft and "0.600" in with_draft
    without = _render(RunStats(120, None, None, wall_time_s=1.0))
    assert "acceptance" not in without and "120" in without
