"""Build the tiny Llama 4 pair: a text target, EAGLE drafts and a word-level tokenizer.

Weights are set by hand so that greedy acceptance is known exactly:

* target (8 layers, every second one MoE): every attention ``o_proj`` and MLP/expert ``down_proj`` is zero, so the residual
  stream stays the token embedding; the embedding is the identity and
  ``lm_head[succ(i), i] = 1``. Greedy output is the successor chain ``succ``.
* draft: one dense layer with the same zero outputs, ``fc = [I | 0]`` (passes the token
  embedding through, ignores the target's hidden state) and ``lm_head`` = the draft's map.
  The perfect draft uses ``succ``; the imperfect one is wrong on ``WRONG_TOKENS``.

Only numpy, safetensors and tokenizers are needed: no torch, no network, same bytes every time.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from llama4spec.tiny.paths import TINY_VERSION, tiny_root

VOCAB = 256
HIDDEN = 256
HEADS = 4
KV_HEADS = 2
HEAD_DIM = 64
MLP = 128  # dense intermediate size
EXPERT = 64  # MoE expert intermediate size
EXPERTS = 2
LAYERS = 8  # target decoder layers; every second one is MoE, every fourth uses no RoPE (as in Llama 4)
SPECIALS = ["<s>", "</s>", "<pad>", "<unk>"]  # no substring of any word
BOS, EOS, PAD, UNK = range(4)
FIRST_WORD = len(SPECIALS)
WORDS = list(range(FIRST_WORD, VOCAB))


def word(i: int) -> str:
    return f"w{i}"


def successor(i: int) -> int:
    """The target's greedy next token: a cycle over the ordinary words (never a special token)."""
    if i < FIRST_WORD:
        return FIRST_WORD
    return FIRST_WORD + (i - FIRST_WORD + 1) % len(WORDS)


# The imperfect draft is wrong after these tokens (about 30% of the words, fixed by formula).
WRONG_TOKENS = frozenset(i for i in WORDS if (i * 7919) % 10 < 3)


def draft_successor(i: int, imperfect: bool) -> int:
    """The draft's next token: the successor, or (imperfect, on WRONG_TOKENS) the one after it."""
    if imperfect and i in WRONG_TOKENS:
        return successor(successor(i))
    return successor(i)


def _lm_head(next_of) -> np.ndarray:
    head = np.zeros((VOCAB, HIDDEN), dtype=np.float32)
    for i in range(VOCAB):
        head[next_of(i), i] = 1.0
    return head


def _attention(prefix: str) -> dict[str, np.ndarray]:
    z = np.zeros
    return {
        f"{prefix}.self_attn.q_proj.weight": z((HEADS * HEAD_DIM, HIDDEN), np.float32),
        f"{prefix}.self_attn.k_proj.weight": z((KV_HEADS * HEAD_DIM, HIDDEN), np.float32),
        f"{prefix}.self_attn.v_proj.weight": z((KV_HEADS * HEAD_DIM, HIDDEN), np.float32),
        f"{prefix}.self_attn.o_proj.weight": z((HIDDEN, HEADS * HEAD_DIM), np.float32),
        f"{prefix}.input_layernorm.weight": np.ones(HIDDEN, np.float32),
        f"{prefix}.post_attention_layernorm.weight": np.ones(HIDDEN, np.float32),
    }


def _dense_mlp(prefix: str) -> dict[str, np.ndarray]:
    z = np.zeros
    return {
        f"{prefix}.feed_forward.gate_proj.weight": z((MLP, HIDDEN), np.float32),
        f"{prefix}.feed_forward.up_proj.weight": z((MLP, HIDDEN), np.float32),
        f"{prefix}.feed_forward.down_proj.weight": z((HIDDEN, MLP), np.float32),
    }


def _moe(prefix: str) -> dict[str, np.ndarray]:
    z = np.zeros
    ff = f"{prefix}.feed_forward"
    return {
        f"{ff}.experts.gate_up_proj": z((EXPERTS, HIDDEN, 2 * EXPERT), np.float32),
        f"{ff}.experts.down_proj": z((EXPERTS, EXPERT, HIDDEN), np.float32),
        f"{ff}.router.weight": z((EXPERTS, HIDDEN), np.float32),
        f"{ff}.shared_expert.gate_proj.weight": z((EXPERT, HIDDEN), np.float32),
        f"{ff}.shared_expert.up_proj.weight": z((EXPERT, HIDDEN), np.float32),
        f"{ff}.shared_expert.down_proj.weight": z((HIDDEN, EXPERT), np.float32),
    }


def _text_config(**changes) -> dict:
    cfg = {
        "architectures": ["Llama4ForCausalLM"],
        "model_type": "llama4_text",
        "attention_bias": False,
        "attention_chunk_size": 8192,
        "attention_dropout": 0.0,
        "attn_scale": 0.1,
        "attn_temperature_tuning": True,
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "pad_token_id": PAD,
        "floor_scale": 8192,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "initializer_range": 0.02,
        "interleave_moe_layer_step": 2,
        "intermediate_size": EXPERT,
        "intermediate_size_mlp": MLP,
        "max_position_embeddings": 2048,
        "moe_layers": [i for i in range(LAYERS) if i % 2 == 1],
        "no_rope_layers": [0 if i % 4 == 3 else 1 for i in range(LAYERS)],
        "num_attention_heads": HEADS,
        "num_experts_per_tok": 1,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "num_local_experts": EXPERTS,
        "rms_norm_eps": 1e-05,
        "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"},
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "use_qk_norm": True,
        "vocab_size": VOCAB,
    }
    cfg.update(changes)
    return cfg


def target_files() -> tuple[dict, dict[str, np.ndarray]]:
    tensors = {"model.embed_tokens.weight": np.eye(VOCAB, HIDDEN, dtype=np.float32)}
    for i in range(LAYERS):
        prefix = f"model.layers.{i}"
        tensors |= _attention(prefix) | (_moe(prefix) if i % 2 == 1 else _dense_mlp(prefix))
    tensors["model.norm.weight"] = np.ones(HIDDEN, np.float32)
    tensors["lm_head.weight"] = _lm_head(successor)
    return _text_config(), tensors


def draft_files(imperfect: bool) -> tuple[dict, dict[str, np.ndarray]]:
    config = _text_config(
        num_hidden_layers=1,
        interleave_moe_layer_step=0,
        moe_layers=[],
        no_rope_layers=[1],
        yoco_global_kv_layer=None,
        yoco_local_kv_layer=None,
        draft_vocab_size=VOCAB,
    )
    fc = np.zeros((HIDDEN, 2 * HIDDEN), np.float32)
    fc[:, :HIDDEN] = np.eye(HIDDEN, dtype=np.float32)  # [I | 0]: embedding in, hidden state ignored
    # Draft weights carry no "model." prefix; without embed_tokens the target's is shared.
    tensors = _attention("layers.0") | _dense_mlp("layers.0")
    tensors |= {
        "fc.weight": fc,
        "norm.weight": np.ones(HIDDEN, np.float32),
        "lm_head.weight": _lm_head(lambda i: draft_successor(i, imperfect)),
    }
    return config, tensors


def tokenizer_json() -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    vocab = {tok: i for i, tok in enumerate(SPECIALS)} | {word(i): i for i in WORDS}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIALS[UNK]))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    tok.add_special_tokens(SPECIALS)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", BOS)]
    )
    return tok.to_str(pretty=True)


def tokenizer_config() -> dict:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": SPECIALS[BOS],
        "eos_token": SPECIALS[EOS],
        "pad_token": SPECIALS[PAD],
        "unk_token": SPECIALS[UNK],
        "model_max_length": 2048,
        "clean_up_tokenization_spaces": False,
    }


def _write_model(directory: Path, config: dict, tensors: dict[str, np.ndarray], tokenizer: bool) -> None:
    from safetensors.numpy import save_file

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    if tokenizer:
        (directory / "tokenizer.json").write_text(tokenizer_json() + "\n")
        (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(), indent=2) + "\n")
        (directory / "generation_config.json").write_text(
            json.dumps({"bos_token_id": BOS, "eos_token_id": EOS, "pad_token_id": PAD}, indent=2) + "\n"
        )


def build(root: Path) -> Path:
    """Write the tiny pair into ``root`` (target/, draft/, draft_imperfect/)."""
    root.mkdir(parents=True, exist_ok=True)
    _write_model(root / "target", *target_files(), tokenizer=True)
    _write_model(root / "draft", *draft_files(imperfect=False), tokenizer=True)
    _write_model(root / "draft_imperfect", *draft_files(imperfect=True), tokenizer=True)
    (root / "VERSION").write_text(TINY_VERSION + "\n")
    return root


def ensure_for(cfg) -> None:
    """Build the tiny pair (once) when ``cfg``'s target or draft is one of its models."""
    from llama4spec.tiny.paths import is_tiny_path

    if is_tiny_path(cfg.target.model) or is_tiny_path(cfg.draft.model):
        ensure_built()


def ensure_built(root: Path | None = None) -> Path:
    """Build the tiny pair once (cached); an interrupted build never leaves a half-written cache."""
    root = root or tiny_root()
    if (root / "VERSION").is_file():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-", dir=root.parent))
    try:
        build(tmp)
        try:
            os.replace(tmp, root)
        except OSError:  # another process won the race, or root exists without VERSION
            if not (root / "VERSION").is_file():
                shutil.rmtree(root, ignore_errors=True)
                os.replace(tmp, root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root
