"""The tiny Llama 4 pair's files: configs, hand-set weights and a word-level tokenizer.

Weights are set by hand so that greedy acceptance is known exactly:

* target (8 layers, every second one MoE): every attention ``o_proj`` and MLP/expert ``down_proj`` is zero, so the residual
  stream stays the token embedding; the embedding is the identity and
  ``lm_head[succ(i), i] = 1``. Greedy output is the successor chain ``succ``.
* draft: one dense layer with the same zero outputs, ``fc = [I | 0]`` (passes the token
  embedding through, ignores the target's hidden state) and ``lm_head`` = the draft's map.
  The perfect draft uses ``succ``; the imperfect one is wrong on ``WRONG_TOKENS``.
* draft model (``draft_model``, ``draft_model_imperfect``): a plain one-layer Llama (``LlamaForCausalLM``)
  with the target's vocabulary and the same hand-set stream (identity embedding, zero ``o_proj`` and
  ``down_proj``); its ``lm_head`` is the perfect or the imperfect draft's map, so a greedy draft model
  proposes exactly what the EAGLE draft of the same map proposes (each token depends on the last alone).
* EAGLE-3 head (``draft_eagle3``, ``draft_eagle3_imperfect``; ``tiny.eagle3``): vLLM's Llama EAGLE-3 layer
  reading three of the target's auxiliary hidden states (each the token embedding here) through
  ``fc``; its MLP moves the one-hot stream one word along the chain per drafting step, so it proposes
  what the EAGLE draft of the same map proposes up to the first rejection.
* contrast draft (``tiny.contrast``): wrong after every word of one vocabulary block, right elsewhere.
* spread target and draft (``tiny.spread``): the same stream, but the head puts a second word
  ``alt(i)`` beside ``succ(i)``, so the next-word distribution at temperature T is known exactly and
  acceptance at T > 0 depends on T.

Only numpy, safetensors and tokenizers are needed: no torch, no network, same bytes every time.
"""

from __future__ import annotations

import json

import numpy as np

from llama4spec.tiny import contrast, eagle3, spread
from llama4spec.tiny.paths import TINY_VERSION
from llama4spec.tiny.words import BOS, EOS, HIDDEN, PAD, SPECIALS, UNK, VOCAB, WORDS, successor, word

HEADS = 4
KV_HEADS = 2
HEAD_DIM = 64
MLP = 128  # dense intermediate size
EXPERT = 64  # MoE expert intermediate size
EXPERTS = 2
LAYERS = 8  # target decoder layers; every second one is MoE, every fourth uses no RoPE (as in Llama 4)


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


def spread_target_files() -> tuple[dict, dict[str, np.ndarray]]:
    """The target with the spread head (``tiny.spread``): same stream, two likely next words."""
    config, tensors = target_files()
    return config, tensors | {"lm_head.weight": spread.head(spread.TARGET_GAP)}


def draft_files(imperfect: bool, head: np.ndarray | None = None) -> tuple[dict, dict[str, np.ndarray]]:
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
        "lm_head.weight": _lm_head(lambda i: draft_successor(i, imperfect)) if head is None else head,
    }
    return config, tensors


def _llama_config(architecture: str, **changes) -> dict:
    """A one-layer Llama config on the tiny target's vocabulary, tokens and attention shape (the
    draft model's and the EAGLE-3 head's); ``changes`` replace or add keys."""
    config = {
        "architectures": [architecture],
        "model_type": "llama",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "pad_token_id": PAD,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "initializer_range": 0.02,
        "intermediate_size": MLP,
        "max_position_embeddings": 2048,
        "mlp_bias": False,
        "num_attention_heads": HEADS,
        "num_hidden_layers": 1,
        "num_key_value_heads": KV_HEADS,
        "rms_norm_eps": 1e-05,
        "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"},
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "vocab_size": VOCAB,
    }
    config.update(changes)
    return config


def draft_model_files(imperfect: bool) -> tuple[dict, dict[str, np.ndarray]]:
    """A small stand-alone draft model (vLLM's ``draft_model`` method): a one-layer Llama with the
    target's vocabulary and tokenizer, predicting ``draft_successor`` from the last token."""
    config = _llama_config("LlamaForCausalLM")
    z = np.zeros
    tensors = {
        "model.embed_tokens.weight": np.eye(VOCAB, HIDDEN, dtype=np.float32),
        "model.layers.0.mlp.gate_proj.weight": z((MLP, HIDDEN), np.float32),
        "model.layers.0.mlp.up_proj.weight": z((MLP, HIDDEN), np.float32),
        "model.layers.0.mlp.down_proj.weight": z((HIDDEN, MLP), np.float32),
        "model.norm.weight": np.ones(HIDDEN, np.float32),
        "lm_head.weight": _lm_head(lambda i: draft_successor(i, imperfect)),
    }
    tensors |= _attention("model.layers.0")
    return config, tensors


def eagle3_files(imperfect: bool) -> tuple[dict, dict[str, np.ndarray]]:
    """A tiny EAGLE-3 head (vLLM's ``Eagle3LlamaForCausalLM``, as NVIDIA's Maverick head loads): see ``tiny.eagle3``."""
    config = _llama_config(
        "LlamaForCausalLMEagle3", intermediate_size=eagle3.INTERMEDIATE, rms_norm_eps=eagle3.EPS,
        draft_vocab_size=VOCAB, target_hidden_size=HIDDEN,
        eagle_config={"eagle_aux_hidden_state_layer_ids": list(eagle3.AUX_LAYERS), "use_aux_hidden_state": True})
    z = np.zeros
    # Weight names as vLLM's EAGLE-3 loader reads them (it adds "model."); without embed_tokens the
    # target's is shared. The first layer's q/k/v read [embedding | hidden] (2 x hidden wide).
    tensors = {
        "layers.0.self_attn.q_proj.weight": z((HEADS * HEAD_DIM, 2 * HIDDEN), np.float32),
        "layers.0.self_attn.k_proj.weight": z((KV_HEADS * HEAD_DIM, 2 * HIDDEN), np.float32),
        "layers.0.self_attn.v_proj.weight": z((KV_HEADS * HEAD_DIM, 2 * HIDDEN), np.float32),
        "layers.0.self_attn.o_proj.weight": z((HIDDEN, HEADS * HEAD_DIM), np.float32),
        "layers.0.input_layernorm.weight": np.ones(HIDDEN, np.float32),
        "layers.0.hidden_norm.weight": np.ones(HIDDEN, np.float32),
        "layers.0.post_attention_layernorm.weight": np.ones(HIDDEN, np.float32),
        "norm.weight": np.ones(HIDDEN, np.float32),
        "fc.weight": eagle3.fc(),
        "lm_head.weight": _lm_head(lambda i: draft_successor(i, imperfect)),
    }
    tensors |= {f"layers.0.mlp.{name}.weight": w for name, w in eagle3.mlp().items()}
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


def json_bytes(obj) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()


def pair_files() -> dict[str, bytes]:
    """Every file a build writes (except ``MARKER``): path relative to the root -> bytes."""
    from safetensors.numpy import save

    tokenizer = {
        "tokenizer.json": (tokenizer_json() + "\n").encode(),
        "tokenizer_config.json": (json.dumps(tokenizer_config(), indent=2) + "\n").encode(),
        "generation_config.json": (
            json.dumps({"bos_token_id": BOS, "eos_token_id": EOS, "pad_token_id": PAD}, indent=2) + "\n"
        ).encode(),
    }
    files: dict[str, bytes] = {}
    models = {"target": target_files(), "draft": draft_files(False), "draft_imperfect": draft_files(True),
              "target_spread": spread_target_files(),
              "draft_spread": draft_files(False, head=spread.head(spread.DRAFT_GAP)),
              "draft_contrast": draft_files(False, head=_lm_head(contrast.draft_next)),
              "draft_model": draft_model_files(False), "draft_model_imperfect": draft_model_files(True),
              "draft_eagle3": eagle3_files(False), "draft_eagle3_imperfect": eagle3_files(True)}
    for kind, (config, tensors) in models.items():
        files[f"{kind}/config.json"] = json_bytes(config)
        files[f"{kind}/model.safetensors"] = save(tensors, metadata={"format": "pt"})
        files |= {f"{kind}/{name}": data for name, data in tokenizer.items()}
    files["VERSION"] = (TINY_VERSION + "\n").encode()
    return files
