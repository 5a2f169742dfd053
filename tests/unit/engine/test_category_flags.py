"""bench.category: the benchmark's dataset flags for one prompt category, the shipped category files
of the built-in prompts, the oversampling warning, and a category axis sharing one server (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.engine.bench_flags import (
    CATEGORY_FILE_PROMPTS, bench_flags, builtin_category_file, category_flags, dataset_flags, oversampling_warning,
)
from llama4spec.errors import UserError
from llama4spec.runbook.plan import plan_file
from llama4spec.tiny.prompts import CATEGORIES, category_of, category_prompts, last_token


def cfg(*overrides: str):
    return compose_config(list(overrides)).cfg


def _flag(flags: list[str], name: str) -> str:
    return flags[flags.index(name) + 1]


def test_no_category_keeps_the_benchmark_dataset() -> None:
    c = cfg()
    assert category_flags(c, Path("/p.jsonl")) is None
    assert dataset_flags(c) == ["--dataset-name", "random"]
    mt = cfg("target=llama4_scout")
    assert dataset_flags(mt) == ["--dataset-name", "hf", "--dataset-path", "philschmid/mt-bench"]


@pytest.mark.parametrize("category", CATEGORIES)
def test_builtin_category_is_its_shipped_file_as_vllms_custom_dataset(category: str) -> None:
    flags = bench_flags(cfg(f"bench.category={category}"), "http://h:1", Path("/r"), "run=0.json", "x")
    assert _flag(flags, "--dataset-name") == "custom"
    assert _flag(flags, "--dataset-path") == str(builtin_category_file(category))
    assert "--skip-chat-template" in flags  # the word chains go to the model as they are
    assert flags.count("--dataset-name") == 1 and flags.count("--dataset-path") == 1
    with_template = dataset_flags(cfg(f"bench.category={category}", "dataset.chat_template=true"))
    assert "--skip-chat-template" not in with_template


@pytest.mark.parametrize("category", CATEGORIES)
def test_shipped_category_files_are_the_generated_chains(category: str) -> None:
    lines = [json.loads(line) for line in builtin_category_file(category).read_text().splitlines()]
    assert len(lines) == CATEGORY_FILE_PROMPTS
    assert [x["prompt"] for x in lines] == category_prompts(category, CATEGORY_FILE_PROMPTS)
    assert all(x["category"] == category and category_of(last_token(x["prompt"])) == category for x in lines)


def test_spec_bench_file_uses_vllms_own_category_filter() -> None:
    c = cfg("target=llama4_scout", "bench.dataset_name=spec_bench", "bench.dataset_path=/data/question.jsonl",
            "bench.category=coding")
    assert dataset_flags(c) == ["--dataset-name", "spec_bench", "--dataset-path", "/data/question.jsonl",
                                "--spec-bench-category", "coding"]
    assert category_flags(c, None) == dataset_flags(c)


def test_a_category_vllm_cannot_select_is_one_readable_error() -> None:
    with pytest.raises(UserError) as info:
        dataset_flags(cfg("target=llama4_scout", "bench.category=coding"))  # hf mt-bench from the hub
    text = str(info.value)
    assert "bench.category=coding" in text and "bench.dataset_name=spec_bench" in text and "\n" not in text
    with pytest.raises(UserError) as info:
        dataset_flags(cfg("bench.category=coding"))  # not a built-in category
    assert "clean_start" in str(info.value) and "early_miss" in str(info.value)


def test_oversampling_warning_when_concurrency_or_requests_exceed_the_prompts() -> None:
    assert oversampling_warning(cfg("bench.category=clean_start")) is None  # 16 requests, concurrency 4
    warning = oversampling_warning(cfg("bench.category=clean_start", "bench.max_concurrency=32"))
    assert warning and "concurrency 32 > its 16 prompts" in warning and "oversamples" in warning
    warning = oversampling_warning(cfg("bench.category=early_miss", "bench.num_prompts=40"))
    assert warning and "40 requests from 16 prompts" in warning
    assert oversampling_warning(cfg("bench.max_concurrency=32")) is None  # no category


def test_a_category_axis_is_client_side_one_server_for_all(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("""
name: cats
overrides: [target=tiny, memory=cpu, bench=random_tiny, draft=tiny_eagle_imperfect, serve.port=8123]
steps:
  - id: s
    kind: sweep
    matrix: {bench.category: [clean_start, early_miss]}
""")
    plan = plan_file(path, lambda name: Path("runs/x"), [])
    serves = [p for p in plan.steps if p.kind == "serve"]
    benches = [p for p in plan.steps if p.kind == "bench"]
    assert len(serves) == 1 and len(benches) == 2
    assert [_flag(b.argv, "--dataset-path") for b in benches] == [str(builtin_category_file(c)) for c in CATEGORIES]
    assert all(b.step.server == serves[0].id for b in benches)
