"""vLLM's other speculative methods on a real vLLM (CPU build) with the tiny Llama 4 target.

The tiny draft models (``draft=tiny_draft_model``, ``tiny_draft_model_imperfect``: a one-layer Llama
with the target's vocabulary, vLLM's ``draft_model`` method) predict the next token from the last one
alone, with the same maps as the EAGLE drafts, so greedy verification accepts exactly what the
simulation of those maps says (tests/tiny_sim.py): the counters must equal it.

The tiny EAGLE-3 heads (``draft=tiny_eagle3``, ``tiny_eagle3_imperfect``: vLLM's ``Eagle3LlamaForCausalLM``
reading three of the target's auxiliary hidden states, ``llama4spec/tiny/eagle3.py``) propose what the
EAGLE drafts of the same maps propose up to the first rejection, so their counters equal the same
simulation's. The imperfect head runs here (its exact counts need every part of the head right); the
perfect one's chain is checked on its built weights in tests/unit/tiny/test_eagle3.py, one engine
start fewer.
"""

from __future__ import annotations

import json

import pytest

from llama4spec.offline.prompts import builtin_prompts
from llama4spec.tiny.words import successor
from tests import tiny_sim
from tests.helpers import run_cli

pytestmark = pytest.mark.engine

K = 3
MAX_TOKENS = 64
PROMPTS = 4
IMPERFECT_PROMPTS = 8


def _offline(tmp_path_factory, draft: str, prompts: int) -> dict:
    path = tmp_path_factory.mktemp(draft) / "run.json"
    res = run_cli("offline", f"draft={draft}", f"lookahead={K}", f"generation.max_tokens={MAX_TOKENS}",
                  f"dataset.num_prompts={prompts}", "--json", str(path))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def draft_model(tmp_path_factory, tiny_dir) -> dict:
    return _offline(tmp_path_factory, "tiny_draft_model", PROMPTS)


@pytest.fixture(scope="module")
def draft_model_imperfect(tmp_path_factory, tiny_dir) -> dict:
    return _offline(tmp_path_factory, "tiny_draft_model_imperfect", IMPERFECT_PROMPTS)


@pytest.fixture(scope="module")
def eagle3_imperfect(tmp_path_factory, tiny_dir) -> dict:
    return _offline(tmp_path_factory, "tiny_eagle3_imperfect", IMPERFECT_PROMPTS)


def _assert_counts(acc: dict, steps: int, per_pos: list[int]) -> None:
    assert acc["num_drafts"] == steps
    assert acc["num_draft_tokens"] == K * steps
    assert acc["accepted_per_pos"] == per_pos
    assert acc["num_accepted_tokens"] == sum(per_pos)
    assert acc["acceptance_rate_per_position"] == pytest.approx([n / steps for n in per_pos])


def test_perfect_draft_model_accepts_every_position(draft_model) -> None:
    record = draft_model
    assert record["config"]["draft"]["method"] == "draft_model"
    acc = record["stats"]["acceptance"]
    steps, per_pos = tiny_sim.expected_counts(builtin_prompts(PROMPTS), MAX_TOKENS, K, tiny_sim.perfect)
    assert per_pos == [steps] * K
    _assert_counts(acc, steps, per_pos)
    assert acc["acceptance_rate_per_position"] == [1.0] * K and acc["mean_acceptance_length"] == K + 1
    for prompt, output in zip(builtin_prompts(PROMPTS), record["outputs"]):  # the target's own greedy chain
        chain, x = [], int(prompt.split()[-1][1:])
        for _ in range(MAX_TOKENS):
            x = successor(x)
            chain.append(x)
        assert output["token_ids"] == chain


def test_imperfect_draft_model_matches_the_successor_maps(draft_model_imperfect) -> None:
    acc = draft_model_imperfect["stats"]["acceptance"]
    steps, per_pos = tiny_sim.expected_counts(builtin_prompts(IMPERFECT_PROMPTS), MAX_TOKENS, K, tiny_sim.imperfect)
    assert per_pos[0] < steps  # really imperfect
    _assert_counts(acc, steps, per_pos)


def test_imperfect_eagle3_head_matches_the_imperfect_eagle_draft(eagle3_imperfect) -> None:
    acc = eagle3_imperfect["stats"]["acceptance"]
    steps, per_pos = tiny_sim.expected_counts(builtin_prompts(IMPERFECT_PROMPTS), MAX_TOKENS, K, tiny_sim.imperfect)
    assert per_pos[0] < steps  # really imperfect
    _assert_counts(acc, steps, per_pos)
