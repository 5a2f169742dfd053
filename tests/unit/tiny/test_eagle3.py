"""The tiny EAGLE-3 head: the files vLLM's EAGLE-3 Llama head reads, and its forward pass on them
(numpy, as vLLM computes it) proposing what the EAGLE draft of the same map is accepted for."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llama4spec.offline.prompts import builtin_prompts
from llama4spec.tiny import build as tiny
from llama4spec.tiny import eagle3, words
from llama4spec.tiny.prompts import last_token
from llama4spec.tiny.weights import draft_successor
from tests import tiny_sim

K = 3


@pytest.fixture(scope="module")
def heads(tmp_path_factory):
    from safetensors.numpy import load_file

    root = tiny.build_into(tmp_path_factory.mktemp("pair"))
    return {kind: (json.loads((root / kind / "config.json").read_text()), load_file(str(root / kind / "model.safetensors")))
            for kind in ("draft_eagle3", "draft_eagle3_imperfect", "target")}


def _aux(token: int) -> list[np.ndarray]:
    """The tiny target's auxiliary states at a position holding ``token``: its one-hot embedding, after every layer."""
    return [np.eye(words.VOCAB, dtype=np.float32)[token]] * len(eagle3.AUX_LAYERS)


def _rms_norm(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eagle3.EPS)


def _step(hidden: np.ndarray, weights: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """One drafting step of vLLM's EAGLE-3 layer with zero attention output (``llama_eagle3.py``): the
    residual is the input hidden state, the MLP reads its norm, the head samples from the norm of the sum,
    and the next step is fed the sum (logits, next hidden state)."""
    x = _rms_norm(hidden)
    gate, up = x @ weights["gate_proj"].T, x @ weights["up_proj"].T
    out = hidden + (gate / (1.0 + np.exp(-gate)) * up) @ weights["down_proj"].T
    return _rms_norm(out) @ weights["lm_head"].T, out


def _proposals(weights: dict[str, np.ndarray], token: int, k: int) -> list[int]:
    """The head's greedy drafts from the built weights (not from ``eagle3``'s own constants)."""
    mlp = {name: weights[f"layers.0.mlp.{name}.weight"] for name in ("gate_proj", "up_proj", "down_proj")}
    hidden = weights["fc.weight"] @ np.concatenate(_aux(token))
    out = []
    for _ in range(k):
        logits, hidden = _step(hidden, mlp | {"lm_head": weights["lm_head.weight"]})
        out.append(int(np.argmax(logits)))
    return out


def test_config_is_what_vllms_eagle3_head_reads(heads):
    config, weights = heads["draft_eagle3"]
    target, _ = heads["target"]
    assert config["architectures"] == ["LlamaForCausalLMEagle3"] and config["model_type"] == "llama"
    ids = config["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
    assert len(ids) == 3 and all(0 <= i <= target["num_hidden_layers"] for i in ids)
    assert config["draft_vocab_size"] == config["vocab_size"] == target["vocab_size"]  # no d2t / t2d needed
    h = config["hidden_size"]
    assert weights["fc.weight"].shape == (h, len(ids) * h)
    assert weights["layers.0.self_attn.q_proj.weight"].shape[1] == 2 * h  # [embedding | hidden]
    assert not np.any(weights["layers.0.self_attn.o_proj.weight"])
    assert not any(k.startswith("model.") or "embed_tokens" in k for k in weights)  # the target's embedding is shared


def test_perfect_head_walks_the_successor_chain(heads):
    _, weights = heads["draft_eagle3"]
    for x in range(words.VOCAB):
        want, y = [], words.successor(x)  # y: the token the target samples after x
        for _ in range(5):
            y = words.successor(y)
            want.append(y)
        assert _proposals(weights, x, 5) == want


def test_imperfect_head_is_wrong_where_the_imperfect_draft_is(heads):
    _, weights = heads["draft_eagle3_imperfect"]
    for x in range(words.VOCAB):
        sampled = words.successor(x)
        assert _proposals(weights, x, 1) == [draft_successor(sampled, imperfect=True)]


def _simulate(weights, prompt: str, max_tokens: int) -> tuple[int, list[int]]:
    """Greedy verification with the head's own proposals (vLLM's counting, as tests/tiny_sim.py)."""
    before, out = last_token(prompt), [words.successor(last_token(prompt))]
    steps, per_pos = 0, [0] * K
    while len(out) < max_tokens:
        proposals = _proposals(weights, before, K)
        accepted, x = 0, out[-1]
        while accepted < K and proposals[accepted] == words.successor(x):
            x = proposals[accepted]
            accepted += 1
        steps += 1
        for j in range(accepted):
            per_pos[j] += 1
        for _ in range(accepted + 1):
            before = out[-1]
            out.append(words.successor(out[-1]))
    return steps, per_pos


def test_acceptance_is_the_eagle_simulations_exactly(heads):
    for kind, draft_next in (("draft_eagle3", tiny_sim.perfect), ("draft_eagle3_imperfect", tiny_sim.imperfect)):
        _, weights = heads[kind]
        prompts = builtin_prompts(8)
        got = [_simulate(weights, p, 64) for p in prompts]
        steps, per_pos = sum(s for s, _ in got), [sum(c[i] for _, c in got) for i in range(K)]
        assert (steps, per_pos) == tiny_sim.expected_counts(prompts, 64, K, draft_next)
    assert per_pos[0] < steps  # the imperfect head really is imperfect


def test_the_modules_weights_are_the_built_ones(heads):
    """``eagle3.fc`` and ``eagle3.mlp`` are what the build writes (the files above are read back)."""
    _, weights = heads["draft_eagle3"]
    assert np.array_equal(weights["fc.weight"], eagle3.fc())
    for name, w in eagle3.mlp().items():
        assert np.array_equal(weights[f"layers.0.mlp.{name}.weight"], w)


def test_the_memory_plan_counts_the_heads_parameters(heads):
    """The memory plan's EAGLE-3 count (fc over three aux states, 2h-wide qkv, hidden_norm) is the checkpoint's size."""
    from llama4spec.preflight import count

    config, weights = heads["draft_eagle3"]
    target, _ = heads["target"]
    assert count.eagle_draft(config, "eagle3", target).total == sum(w.size for w in weights.values())
