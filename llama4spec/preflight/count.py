"""Parameter counts from a ``config.json`` alone (Llama 3 / Llama 4 text, Llama 4 vision, EAGLE heads).

Every MoE expert is counted. Parameters are grouped by what quantization can do to them:
``linear`` (decoder projections and experts: what FP8 weight quantization shrinks) and ``other``
(embeddings, lm_head, norms, routers, vision tower, and linear modules a quantized checkpoint leaves
unconverted: kept in the model dtype). Of each group, ``whole_*`` are the parameters every
tensor-parallel rank holds whole (vLLM builds them replicated: an EAGLE head's ``fc`` and norms).

Linear modules are named as vLLM 0.32 names them (``language_model.model.layers.3.self_attn.qkv_proj``,
``model.layers.48.feed_forward.gate_up_proj`` for a draft behind a 48-layer target), so that a
checkpoint's ``modules_to_not_convert`` can be matched the way vLLM matches it (``is_layer_skipped``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection

from llama4spec.preflight.values import is_int, text_of

# vLLM's packed_modules_mapping for Llama and Llama 4: a fused module is skipped when all its shards are.
FUSED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}


@dataclass
class Params:
    linear: int = 0
    other: int = 0
    active: int = 0  # used per token: routed experts counted top-k times, vision excluded
    parts: dict[str, int] = field(default_factory=dict)
    whole_linear: int = 0  # of linear: held whole by every TP rank (replicated)
    whole_other: int = 0  # of other: held whole by every TP rank
    unconverted: int = 0  # of other: linear modules the checkpoint's quantization leaves in the model dtype
    buffer_bytes: int = 0  # integer tables every rank holds (an EAGLE-3 head's draft-to-target token map)

    @property
    def total(self) -> int:
        return self.linear + self.other

    def add(self, part: str, n: int, linear: bool, active: bool = True, whole: bool = False) -> None:
        if linear:
            self.linear += n
            self.whole_linear += n if whole else 0
        else:
            self.other += n
            self.whole_other += n if whole else 0
        if active:
            self.active += n
        self.parts[part] = self.parts.get(part, 0) + n

    def add_module(self, part: str, name: str, n: int, keep: Collection[str], active: bool = True,
                   whole: bool = False) -> None:
        """A linear module: in ``other`` (model dtype) when ``keep`` names it as vLLM matches names."""
        kept = skipped(name, keep)
        self.add(part, n, linear=not kept, active=active, whole=whole)
        self.unconverted += n if kept else 0


def skipped(name: str, keep: Collection[str]) -> bool:
    """vLLM 0.32's ``is_layer_skipped`` in its default exact mode: the module's own name, or every shard of
    a fused module (q/k/v_proj, gate/up_proj), or for fused experts any listed name containing the module's."""
    if not keep:
        return False
    if name in keep:
        return True
    parent, _, leaf = name.rpartition(".")
    if leaf in FUSED:
        return all(f"{parent}.{shard}" in keep for shard in FUSED[leaf])
    if "experts" in name:
        return any(name in entry for entry in keep if "experts" in entry)
    return False


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


def decoder(text: dict[str, Any], p: Params | None = None, root: str = "model", offset: int = 0,
            keep: Collection[str] = (), eagle3: bool = False, norms_whole: bool = False) -> Params:
    """The decoder stack without embeddings: attention, dense MLPs, experts, norms.

    ``root`` and ``offset`` give vLLM's module names (layer i is ``{root}.layers.{i + offset}``); ``keep``
    the checkpoint's unconverted modules. ``eagle3``: vLLM's EAGLE-3 layer, whose first qkv_proj reads
    [embedding | hidden] (2 x hidden wide) and which adds a hidden_norm per layer."""
    p = p or Params()
    h, n = text["hidden_size"], text["num_hidden_layers"]
    d = head_dim(text)
    q, kv = text["num_attention_heads"] * d, text["num_key_value_heads"] * d
    bias = bool(text.get("attention_bias"))
    moe = set(moe_layers(text))
    llama4 = text.get("model_type") == "llama4_text"
    mlp = "feed_forward" if llama4 else "mlp"
    dense_ff = text.get("intermediate_size_mlp") or text["intermediate_size"]
    if moe:
        ff, experts, top_k = text["intermediate_size"], text["num_local_experts"], text.get("num_experts_per_tok") or 1
        expert = 3 * h * ff
    for i in range(n):
        layer = f"{root}.layers.{i + offset}"
        width = 2 * h if (eagle3 and i == 0) else h
        p.add_module("attention", f"{layer}.self_attn.qkv_proj", width * (q + 2 * kv) + (q + 2 * kv if bias else 0), keep)
        p.add_module("attention", f"{layer}.self_attn.o_proj", q * h + (h if bias else 0), keep)
        p.add("norms", (3 if eagle3 else 2) * h, linear=False, whole=norms_whole)
        if i in moe:
            p.add_module("experts (active)", f"{layer}.{mlp}.experts", top_k * expert, keep)
            p.add_module("experts (idle)", f"{layer}.{mlp}.experts", (experts - top_k) * expert, keep, active=False)
            p.add_module("shared experts", f"{layer}.{mlp}.shared_expert.gate_up_proj", 2 * h * ff, keep)
            p.add_module("shared experts", f"{layer}.{mlp}.shared_expert.down_proj", h * ff, keep)
            p.add("routers", h * experts, linear=False)
        else:
            p.add_module("mlp", f"{layer}.{mlp}.gate_up_proj", 2 * h * dense_ff, keep)
            p.add_module("mlp", f"{layer}.{mlp}.down_proj", h * dense_ff, keep)
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


def model(cfg: dict[str, Any], keep: Collection[str] = ()) -> Params:
    """A full causal LM (target): embeddings, decoder, final norm, lm_head, vision tower.

    ``keep``: the checkpoint's ``modules_to_not_convert`` (counted in the model dtype)."""
    text = text_of(cfg)
    h, vocab = text["hidden_size"], text["vocab_size"]
    root = "language_model.model" if text is not cfg else "model"
    p = decoder(text, root=root, keep=set(keep))
    p.add("embeddings", vocab * h, linear=False)
    p.add("norms", h, linear=False)
    tied = cfg.get("tie_word_embeddings", text.get("tie_word_embeddings", False))
    if not tied:
        p.add("lm_head", vocab * h, linear=False)
    n = vision(cfg, h)
    if n:
        p.add("vision", n, linear=False, active=False)
    return p


def _positive(value: Any) -> int | None:
    return value if is_int(value) and value > 0 else None


def eagle3_fc_input(text: dict[str, Any]) -> int:
    """Width of an EAGLE-3 head's fc input, as vLLM 0.32's llama_eagle3.py sizes it: target_hidden_size x the
    number of auxiliary hidden states (num_aux_hidden_states, else eagle_config's layer ids, else 3); 0 when
    eagle_config.use_aux_hidden_state is false (no fc)."""
    eagle = text.get("eagle_config") if isinstance(text.get("eagle_config"), dict) else {}
    if eagle.get("use_aux_hidden_state", True) is False:
        return 0
    ids = eagle.get("eagle_aux_hidden_state_layer_ids")
    aux = _positive(text.get("num_aux_hidden_states")) or (len(ids) if isinstance(ids, list) and ids else 3)
    return (_positive(text.get("target_hidden_size")) or text["hidden_size"]) * aux


def eagle_draft(cfg: dict[str, Any], method: str = "eagle", target: dict[str, Any] | None = None,
                keep: Collection[str] = (), own_embedding: bool = False) -> Params:
    """An EAGLE or EAGLE-3 head as vLLM 0.32 loads it, sharded over the target's TP ranks but for the
    parts every rank holds whole (fc, norms, the EAGLE-3 token map).

    - eagle, Llama 4 head (llama4_eagle.py): fc is a plain torch Linear over [embedding | hidden]
      (2h -> h): replicated and never quantized.
    - eagle, Llama head (llama_eagle.py): fc a ReplicatedLinear 2h -> h, under the head's quantization.
    - eagle3 (llama_eagle3.py): fc a ReplicatedLinear from target_hidden_size x aux states (3h by default)
      to h, under the head's quantization; the first layer's qkv_proj reads 2h; a hidden_norm per layer;
      optional input_norm / fc_norm; a draft-to-target int64 map when draft_vocab_size differs from the target's.
    The token embedding is the target's (shared) unless ``own_embedding`` (vLLM keeps the head's own under
    pipeline parallelism, where the last stage has no target embedding)."""
    text = text_of(cfg)
    h = text["hidden_size"]
    keep = set(keep)
    offset = text_of(target)["num_hidden_layers"] if target else 0
    eagle3 = method == "eagle3"
    p = decoder(text, root="model", offset=offset, keep=keep, eagle3=eagle3, norms_whole=True)
    if eagle3:
        width = eagle3_fc_input(text)
        if width:
            p.add_module("fc", "model.fc", width * h, keep, whole=True)
            eagle = text.get("eagle_config") if isinstance(text.get("eagle_config"), dict) else {}
            if eagle.get("norm_before_fc", text.get("norm_before_fc", False)):
                p.add("norms", width, linear=False, whole=True)
            if text.get("fc_norm"):
                p.add("norms", width, linear=False, whole=True)
    elif text.get("model_type") == "llama4_text":
        p.add("fc", 2 * h * h, linear=False, whole=True)
    else:
        p.add_module("fc", "model.fc", 2 * h * h, keep, whole=True)
    p.add("norms", h, linear=False, whole=True)
    draft_vocab = text.get("draft_vocab_size") or text["vocab_size"]
    p.add("lm_head", draft_vocab * h, linear=False)
    if own_embedding:
        p.add("embeddings (own: pipeline parallel)", text["vocab_size"] * h, linear=False)
    target_vocab = text_of(target).get("vocab_size") if target else None
    if eagle3 and target_vocab and draft_vocab != target_vocab:
        p.buffer_bytes += 8 * draft_vocab  # draft_id_to_target_id, int64
    return p
