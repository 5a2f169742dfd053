"""Parameter counts from a ``config.json`` alone (Llama 3 / Llama 4 text, Llama 4 vision, EAGLE heads).

Every MoE expert is counted. Parameters are grouped by what quantization can do to them:
``linear`` (decoder projections and experts: what FP8 weight quantization shrinks) and ``other``
(embeddings, lm_head, norms, routers, vision tower: kept in the model dtype).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llama4spec.preflight.values import text_of


@dataclass
class Params:
    linear: int = 0
    other: int = 0
    active: int = 0  # used per token: routed experts counted top-k times, vision excluded
    parts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.linear + self.other

    def add(self, part: str, n: int, linear: bool, active: bool = True) -> None:
        if linear:
            self.linear += n
        else:
            self.other += n
        if active:
            self.active += n
        self.parts[part] = self.parts.get(part, 0) + n


def head_dim(text: dict[str, Any]) -> int:
    return text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]


def moe_layers(text: dict[str, Any]) -> list[int]:
    """Indices of MoE layers, as transformers derives them for Llama 4."""
    if text.get("model_type") != "llama4_text" or not text.get("num_local_experts"):
        return []
    if text.get("moe_layers") is not None:
        return list(text["moe_layers"])
    step = text.get("interleave_moe_layer_step")
    step = 1 if step is None else step
    return list(range(step - 1, text["num_hidden_layers"], step)) if step else []


def no_rope_layers(text: dict[str, Any]) -> list[int]:
    """1 = RoPE (chunked local attention in Llama 4), 0 = NoPE (global), as transformers fills it."""
    given = text.get("no_rope_layers")
    n = text["num_hidden_layers"]
    if given:
        return list(given)
    return [int((i + 1) % 4 != 0) for i in range(n)]


def chunked_layers(text: dict[str, Any]) -> list[int]:
    """Layers using chunked local attention (Llama 4 RoPE layers when attention_chunk_size is set)."""
    if text.get("model_type") != "llama4_text" or not text.get("attention_chunk_size"):
        return []
    return [i for i, rope in enumerate(no_rope_layers(text)) if rope]


def _attention(p: Params, text: dict[str, Any], layers: int) -> None:
    h, d = text["hidden_size"], head_dim(text)
    q, kv = text["num_attention_heads"] * d, text["num_key_value_heads"] * d
    bias = (q + 2 * kv + h) if text.get("attention_bias") else 0
    p.add("attention", layers * (h * q + 2 * h * kv + q * h + bias), linear=True)
    p.add("norms", layers * 2 * h, linear=False)


def decoder(text: dict[str, Any], p: Params | None = None) -> Params:
    """The decoder stack without embeddings: attention, dense MLPs, experts, norms."""
    p = p or Params()
    h, n = text["hidden_size"], text["num_hidden_layers"]
    _attention(p, text, n)
    moe = set(moe_layers(text))
    dense_ff = text.get("intermediate_size_mlp") or text["intermediate_size"]
    p.add("mlp", (n - len(moe)) * 3 * h * dense_ff, linear=True)
    if moe:
        ff, experts, top_k = text["intermediate_size"], text["num_local_experts"], text.get("num_experts_per_tok") or 1
        expert = 3 * h * ff
        p.add("experts (active)", len(moe) * top_k * expert, linear=True)
        p.add("experts (idle)", len(moe) * (experts - top_k) * expert, linear=True, active=False)
        p.add("shared experts", len(moe) * expert, linear=True)
        p.add("routers", len(moe) * h * experts, linear=False)
    return p


def vision(cfg: dict[str, Any], text_hidden: int) -> int:
    """The Llama 4 vision tower, pixel-shuffle adapter and projector."""
    v = cfg.get("vision_config")
    if not v:
        return 0
    h, ff, layers = v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"]
    patches = (v["image_size"] // v["patch_size"]) ** 2
    n = v["num_channels"] * v["patch_size"] ** 2 * h  # unfold-convolution patch embedding
    n += h + (patches + 1) * h  # class embedding, positional embedding
    n += 2 * 2 * h  # pre/post LayerNorm (weight + bias)
    per_layer = 4 * (h * h + h) + (h * ff + ff) + (ff * h + h) + 2 * 2 * h
    n += layers * per_layer
    shuffled = int(h / v["pixel_shuffle_ratio"] ** 2)
    n += shuffled * v["projector_input_dim"] + v["projector_output_dim"] * v["projector_output_dim"]
    n += v["vision_output_dim"] * text_hidden  # multi-modal projector
    return n


def model(cfg: dict[str, Any]) -> Params:
    """A full causal LM (target): embeddings, decoder, final norm, lm_head, vision tower."""
    text = text_of(cfg)
    h, vocab = text["hidden_size"], text["vocab_size"]
    p = decoder(text)
    p.add("embeddings", vocab * h, linear=False)
    p.add("norms", h, linear=False)
    tied = cfg.get("tie_word_embeddings", text.get("tie_word_embeddings", False))
    if not tied:
        p.add("lm_head", vocab * h, linear=False)
    n = vision(cfg, h)
    if n:
        p.add("vision", n, linear=False, active=False)
    return p


def eagle_draft(cfg: dict[str, Any]) -> Params:
    """An EAGLE head as vLLM loads it: fc over [embedding | hidden], decoder, norm, lm_head over
    draft_vocab_size. The token embedding is the target's (shared), so it is not counted."""
    text = text_of(cfg)
    h = text["hidden_size"]
    p = decoder(text)
    p.add("fc", 2 * h * h, linear=True)
    p.add("norms", h, linear=False)
    p.add("lm_head", (text.get("draft_vocab_size") or text["vocab_size"]) * h, linear=False)
    return p
