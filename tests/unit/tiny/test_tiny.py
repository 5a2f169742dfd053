"""The tiny Llama 4 pair: deterministic files, a round-tripping tokenizer, known maps."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from llama4spec.tiny import build as tiny
from llama4spec.tiny import weights, words

def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def test_build_is_deterministic(tmp_path):
    a, b = tiny.build_into(tmp_path / "a"), tiny.build_into(tmp_path / "b")
    assert _digest(a) == _digest(b)
    assert {"target/config.json", "draft/model.safetensors", "draft_imperfect/config.json"} <= set(_digest(a))


def test_cli_builds_into_a_directory(cli, tmp_path):
    result = cli("tiny-models", str(tmp_path / "pair"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "pair" / "target" / "model.safetensors").is_file()


def test_every_word_round_trips(tiny_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_dir / "target"))
    for i in words.WORDS:
        ids = tok.encode(words.word(i), add_special_tokens=False)
        assert ids == [i]
        assert tok.decode(ids) == words.word(i)
    text = " ".join(words.word(i) for i in words.WORDS)
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text
    assert tok.encode("w10 w11")[0] == words.BOS


def test_draft_config_has_what_vllm_needs(tiny_dir):
    cfg = json.loads((tiny_dir / "draft" / "config.json").read_text())
    assert cfg["architectures"] == ["Llama4ForCausalLM"] and cfg["model_type"] == "llama4_text"
    assert "yoco_global_kv_layer" in cfg and "yoco_local_kv_layer" in cfg
    assert cfg["moe_layers"] == [] and cfg["interleave_moe_layer_step"] == 0
    assert len(cfg["no_rope_layers"]) == cfg["num_hidden_layers"]
    assert cfg["draft_vocab_size"] == cfg["vocab_size"]


def test_weights_encode_the_successor_maps(tiny_dir):
    from safetensors.numpy import load_file

    target = load_file(str(tiny_dir / "target" / "model.safetensors"))
    perfect = load_file(str(tiny_dir / "draft" / "model.safetensors"))
    imperfect = load_file(str(tiny_dir / "draft_imperfect" / "model.safetensors"))
    assert not any(k.startswith("model.") for k in perfect)
    for i in range(words.VOCAB):
        assert target["lm_head.weight"][:, i].argmax() == words.successor(i)
        assert perfect["lm_head.weight"][:, i].argmax() == words.successor(i)
        assert imperfect["lm_head.weight"][:, i].argmax() == weights.draft_successor(i, imperfect=True)
    wrong = [i for i in words.WORDS if weights.draft_successor(i, True) != words.successor(i)]
    assert wrong == sorted(weights.WRONG_TOKENS) and 0 < len(wrong) < len(words.WORDS)
    assert all(words.successor(i) >= words.FIRST_WORD for i in range(words.VOCAB))  # never EOS


def test_the_spread_pair_is_built_beside_the_others(tmp_path):
    root = tiny.build_into(tmp_path / "pair")
    for kind in ("target_spread", "draft_spread"):
        assert (root / kind / "model.safetensors").is_file() and (root / kind / "tokenizer.json").is_file()
    draft = json.loads((root / "draft_spread" / "config.json").read_text())
    assert draft["num_hidden_layers"] == 1 and draft["moe_layers"] == []
