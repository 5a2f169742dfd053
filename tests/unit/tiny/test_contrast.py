"""The contrast tiny pair: a draft wrong after every word of one block, and prompts whose
continuation stays inside the block (acceptance length exactly 1.0) or outside it (k + 1), as the
simulation of greedy EAGLE verification counts them; the shipped prompt file and bench preset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llama4spec.engine.bench_flags import bench_flags
from llama4spec.tiny import contrast
from llama4spec.tiny.words import WORDS, successor
from tests import tiny_sim
from tests.helpers import REPO


def test_the_draft_is_wrong_after_every_block_word_and_right_elsewhere(tiny_dir) -> None:
    from safetensors.numpy import load_file

    head = load_file(str(tiny_dir / "draft_contrast" / "model.safetensors"))["lm_head.weight"]
    proposes = {i: int(np.argmax(head[:, i])) for i in WORDS}
    assert {i for i in WORDS if proposes[i] != successor(i)} == set(contrast.BLOCK)
    assert all(proposes[i] == contrast.draft_next(i) for i in WORDS)


@pytest.mark.parametrize("output", [16, contrast.MAX_OUTPUT])
@pytest.mark.parametrize("k", [1, 3])
def test_a_continuation_inside_the_block_accepts_nothing_and_outside_it_everything(output: int, k: int) -> None:
    items = contrast.prompt_items()
    assert [c for _, c in items] == list(contrast.CATEGORIES) * contrast.PER_CATEGORY
    for category, length in ((contrast.IN_BLOCK, 1.0), (contrast.OUT_BLOCK, k + 1.0)):
        prompts = [p for p, c in items if c == category]
        assert all(contrast.category_of(p, k, output) == category for p in prompts)
        for p in prompts:
            counts = tiny_sim.predict([p], output, k, contrast.draft_next)
            assert 1 + counts.num_accepted_tokens / counts.num_drafts == length, (p, category)


def test_a_continuation_across_the_blocks_edge_has_no_category() -> None:
    assert contrast.category_of(contrast.prompt(contrast.BLOCK.stop - 5)) is None
    assert contrast.category_of(contrast.prompt(contrast.BLOCK.start - 5)) is None


def test_the_shipped_prompt_file_is_the_generated_one() -> None:
    path = REPO / "conf" / "dataset" / "prompts" / "tiny_contrast.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(x["prompt"], x["category"]) for x in lines] == contrast.prompt_items()


def test_the_bench_preset_sends_the_contrast_prompts_as_written(tmp_path) -> None:
    from llama4spec.config.compose import compose_valid

    cfg = compose_valid(["draft=tiny_eagle_contrast", "bench=tiny_contrast"]).cfg
    flags = bench_flags(cfg, "http://127.0.0.1:8000", tmp_path, "run=0.json", "x")
    path = flags[flags.index("--dataset-path") + 1]
    assert flags[flags.index("--dataset-name") + 1] == "custom" and "--skip-chat-template" in flags
    assert Path(path).samefile(REPO / "conf" / "dataset" / "prompts" / "tiny_contrast.jsonl")
    assert flags[flags.index("--num-prompts") + 1] == "120" and flags[flags.index("--output-len") + 1] == "16"
    assert "--input-len" not in flags
