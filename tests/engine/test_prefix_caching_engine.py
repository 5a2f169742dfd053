"""Prefix caching with the tiny Llama 4 EAGLE pair on the engine (vLLM 0.32 CPU build), and the
doctor's answer for the same config.

Three prompts share a 160-token prefix, so the second and third find it in the prefix cache. vLLM
runs the pair without its hybrid KV cache manager (chunked local attention + EAGLE), the chunked
layers in the full-attention cache group, so nothing reaches the chunked-local assertion. Run with
vLLM's EAGLE block drop (its default) and with ``draft.disable_eagle_block_drop=true``: each starts,
generates the target's greedy chain, and the doctor finds no error in either config.
"""

from __future__ import annotations

import json

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.preflight import ERROR, examine, pairing
from llama4spec.tiny.words import successor
from llama4spec.tiny.words import FIRST_WORD, WORDS, word
from tests.engine.conftest import K
from tests.helpers import run_cli

pytestmark = pytest.mark.engine

PREFIX = 160  # tokens shared by every prompt
TAILS = (7, 11, 13)  # each prompt's own last words
MAX_TOKENS = 16


def _prompts() -> list[str]:
    shared = [word(FIRST_WORD + (5 * i) % len(WORDS)) for i in range(PREFIX)]
    return [" ".join(shared + [word(FIRST_WORD + t), word(FIRST_WORD + 2 * t)]) for t in TAILS]


def _overrides(keep_block: bool, prompts) -> list[str]:
    return ["draft=tiny_eagle", f"lookahead={K}", "serve.enable_prefix_caching=true",
            f"draft.disable_eagle_block_drop={str(keep_block).lower()}", "dataset=jsonl", f"dataset.path={prompts}",
            f"dataset.num_prompts={len(TAILS)}", f"generation.max_tokens={MAX_TOKENS}"]


@pytest.mark.parametrize("keep_block", [False, True], ids=["block-drop", "disable_eagle_block_drop"])
def test_eagle_with_prefix_caching_runs_and_the_doctor_agrees(tiny_dir, tmp_path, keep_block):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in _prompts()))
    overrides = _overrides(keep_block, prompts)
    assert [f.line() for f in examine(pairing(compose_config(overrides).cfg)) if f.severity == ERROR] == []

    out = tmp_path / "run.json"
    res = run_cli("offline", *overrides, "--json", str(out), timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["config"]["serve"]["enable_prefix_caching"] is True
    assert record["config"]["draft"]["disable_eagle_block_drop"] is keep_block
    for t, output in zip(TAILS, record["outputs"]):
        chain, x = [], FIRST_WORD + 2 * t
        for _ in range(MAX_TOKENS):
            x = successor(x)
            chain.append(x)
        assert output["token_ids"] == chain
    acceptance = record["stats"]["acceptance"]
    assert acceptance["num_drafts"] > 0 and acceptance["num_accepted_tokens"] > 0
