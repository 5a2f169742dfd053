"""Prompt categories at the source: the built-in chains' categories, JSONL and mt-bench categories,
dataset.category, and the groups offline.by_category runs (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama4spec.config.schema import DatasetConfig
from llama4spec.errors import UserError
from llama4spec.offline.prompts import UNCATEGORISED, Prompts, builtin_items, builtin_prompts, load_prompts
from llama4spec.tiny.prompts import CATEGORIES, CLEAN_SPAN, category_of, last_token
from llama4spec.tiny.weights import WRONG_TOKENS
from llama4spec.tiny.words import successor
from tests import tiny_sim


def test_builtin_items_are_the_builtin_prompts_with_a_category() -> None:
    items = builtin_items(12)
    assert [t for t, _ in items] == builtin_prompts(12)
    assert {c for _, c in items} == set(CATEGORIES)
    for text, category in items:
        x, ahead = successor(last_token(text)), []
        for _ in range(CLEAN_SPAN):
            ahead.append(x)
            x = successor(x)
        assert (category == "clean_start") == (not any(t in WRONG_TOKENS for t in ahead))


def test_the_imperfect_draft_accepts_more_on_clean_starts() -> None:
    """Over every word the tiny target can continue from, and at several lengths and lookaheads."""
    from llama4spec.tiny.words import WORDS

    for max_tokens, k in ((16, 3), (64, 3), (64, 5)):
        length = {}
        for category in CATEGORIES:
            prompts = [f"w{w}" for w in WORDS if category_of(w) == category]
            c = tiny_sim.predict(prompts, max_tokens, k, tiny_sim.imperfect)
            length[category] = 1 + c.num_accepted_tokens / c.num_drafts
        assert length["clean_start"] > length["early_miss"] + 0.05, (max_tokens, k, length)


def test_dataset_category_selects_one_builtin_category() -> None:
    p = load_prompts(DatasetConfig(name="builtin", num_prompts=5, category="early_miss"))
    assert len(p.texts) == 5 and p.categories == ["early_miss"] * 5
    assert p.source == {"kind": "builtin", "num_prompts": 5, "category": "early_miss"}
    with pytest.raises(UserError, match="use one of clean_start, early_miss"):
        load_prompts(DatasetConfig(name="builtin", category="nope"))


def _jsonl(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_jsonl_lines_carry_their_category(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [{"prompt": "a", "category": "x"}, {"prompt": "b"}, {"prompt": "c", "category": "y"},
                             {"prompt": "d", "category": "x"}])
    p = load_prompts(DatasetConfig(name="jsonl", path=str(path), num_prompts=10))
    assert p.categories == ["x", None, "y", "x"]
    assert p.by_category() == {"x": [0, 3], UNCATEGORISED: [1], "y": [2]}
    one = load_prompts(DatasetConfig(name="jsonl", path=str(path), num_prompts=10, category="x"))
    assert one.texts == ["a", "d"] and one.source["category"] == "x"
    with pytest.raises(UserError, match=r"no prompt of category 'z' \(categories in the file: x, y\)"):
        load_prompts(DatasetConfig(name="jsonl", path=str(path), category="z"))
    bad = _jsonl(tmp_path, [{"prompt": "a", "category": 3}])
    with pytest.raises(UserError, match=':1: "category" must be a string'):
        load_prompts(DatasetConfig(name="jsonl", path=str(bad)))


def test_mtbench_question_file_categories(tmp_path: Path) -> None:
    """A local copy of mt-bench's question file (rows with turns and a category)."""
    rows = [{"question_id": i, "category": c, "turns": [f"q{i}", f"follow-up {i}"]}
            for i, c in enumerate(["writing", "math", "writing", "coding"])]
    path = _jsonl(tmp_path, rows)
    p = load_prompts(DatasetConfig(name="mtbench", path=str(path), num_prompts=80))
    assert p.texts == ["q0", "q1", "q2", "q3"] and p.categories == ["writing", "math", "writing", "coding"]
    assert list(p.by_category()) == ["writing", "math", "coding"]
    math = load_prompts(DatasetConfig(name="mtbench", path=str(path), num_prompts=80, category="math"))
    assert math.texts == ["q1"]
    with pytest.raises(UserError, match="mt-bench has no category 'stem'"):
        load_prompts(DatasetConfig(name="mtbench", path=str(path), category="stem"))


def test_prompts_without_categories_are_one_group() -> None:
    assert Prompts(["a", "b"], {}).by_category() == {UNCATEGORISED: [0, 1]}


def test_category_stats_and_record_of_an_engine_run() -> None:
    from llama4spec.config.compose import compose_config
    from llama4spec.offline.outcome import EngineRun
    from llama4spec.offline.stats import category_stats
    from llama4spec.results.acceptance import AcceptanceCounters, RunStats
    from llama4spec.results.offline_record import CategoryRun, Stats

    cfg = compose_config(["draft=tiny_eagle_imperfect", "offline.by_category=true", "lookahead=2"]).cfg

    def run(counters, walls):
        cats = [CategoryRun(name, 2, RunStats(100, c, 2 if c else None, wall))
                for name, c, wall in zip(("a", "b"), counters, walls)]
        k = 2 if counters[0] else None
        return EngineRun("x", RunStats(200, None, k, 1.0), [], [], 0.0, cats)

    spec = run([AcceptanceCounters(10, 20, 12, [7, 5]), AcceptanceCounters(10, 20, 4, [3, 1])], [0.5, 1.0])
    base = run([None, None], [1.0, 1.0])
    stats = category_stats(cfg, spec, base)
    assert [(s.category, s.prompts, s.acceptance_length, s.rates, s.speedup) for s in stats] == [
        ("a", 2, 2.2, (0.7, 0.5), 2.0), ("b", 2, 1.4, (0.3, 0.1), 1.0)]
    assert all(s.draft == "tiny_eagle_imperfect" and s.lookahead == 2 and s.concurrency is None for s in stats)
    record = Stats(spec.stats, spec.categories).to_dict()["by_category"]
    assert record["a"]["accepted_per_pos"] == [7, 5] and record["a"]["num_prompts"] == 2
    assert record["a"]["total_num_output_tokens"] == 100 and record["a"]["generate_s"] == 0.5
    assert Stats(base.stats, base.categories).to_dict()["by_category"]["b"] == {
        "num_prompts": 2, "total_num_output_tokens": 100, "generate_s": 1.0}
