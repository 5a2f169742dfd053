"""The doctor's rules over the draft: the class vLLM loads it as, the keys vLLM's Llama 4 EAGLE head
asserts on (YOCO, vocabulary, MoE, NoPE layers), an EAGLE-3 head's target layers, and its fit to
the target (hidden size, vocabulary, tokenizer, special tokens)."""

from __future__ import annotations

import hashlib
import json

from llama4spec.config import methods
from llama4spec.files import Expect, json_or_none
from llama4spec.preflight import values
from llama4spec.preflight.rule import ERROR, WARNING, Finding, Pairing
from llama4spec.preflight.sources import ModelConfig

# vLLM 0.32 model registry, _SPECULATIVE_DECODING_MODELS: the classes an eagle/eagle3 draft can load as.
EAGLE_DRAFT_CLASSES = frozenset({
    "EagleCohereForCausalLM", "EagleLlamaForCausalLM", "EagleLlama4ForCausalLM", "EagleMiniCPMForCausalLM",
    "EagleMistralForCausalLM", "EagleMistralLarge3ForCausalLM", "EagleDeepSeekMTPModel",
})
EAGLE3_DRAFT_CLASSES = frozenset({
    "Eagle3LlamaForCausalLM", "Eagle3MiniMaxM2ForCausalLM", "LlamaForCausalLMEagle3",
    "Eagle3Qwen2_5vlForCausalLM", "Eagle3Qwen3vlForCausalLM", "Eagle3Qwen3ForCausalLM",
    "Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM",
})


TOKENIZER = Expect("tokenizer", "restore the model's tokenizer.json", 256 << 20)  # a large vocabulary: tens of MiB


def draft_class(p: Pairing) -> list[Finding]:
    if not p.eagle:
        return []
    method = p.cfg.draft.method
    archs = p.draft.config.get("architectures") or []
    if method == "eagle":
        names, known = [a if a.startswith("Eagle") else f"Eagle{a}" for a in archs], EAGLE_DRAFT_CLASSES
    else:
        names = [a if a.startswith("Eagle3") or a.endswith("Eagle3") else f"Eagle3{a}" for a in archs]
        known = EAGLE3_DRAFT_CLASSES
    if any(n in known for n in names):
        return []
    return [Finding(
        "draft-class", ERROR,
        f"draft architectures {archs or '(none)'} load as {names or '(nothing)'} under method {method}",
        f"vLLM registers no such {method} draft class, so the engine fails at start",
        f"use a draft built for {method} (for a Llama 4 EAGLE head: architectures [\"Llama4ForCausalLM\"]), "
        f"or set draft.method to the method the draft was trained for",
    )]


def yoco_keys(p: Pairing) -> list[Finding]:
    if not p.llama4_eagle:
        return []
    out = []
    for key in ("yoco_global_kv_layer", "yoco_local_kv_layer"):
        if key not in p.d:
            out.append(Finding("yoco-keys", ERROR, f"draft config.json has no '{key}'",
                               "vLLM's Llama 4 EAGLE head reads it while loading (AttributeError)",
                               f"add \"{key}\": null to the draft's config.json"))
        elif p.d[key] is not None:
            out.append(Finding("yoco-keys", ERROR, f"draft config.json sets {key}={p.d[key]!r}",
                               "vLLM's Llama 4 EAGLE head supports no YOCO KV sharing (assertion at load)",
                               f"set \"{key}\": null in the draft's config.json"))
    return out


def draft_vocab(p: Pairing) -> list[Finding]:
    if not p.llama4_eagle:
        return []
    size = p.d.get("draft_vocab_size")
    if size is None:
        return [Finding("draft-vocab", ERROR, "draft config.json has no 'draft_vocab_size'",
                        "vLLM sizes the Llama 4 EAGLE lm_head from it (AttributeError at load)",
                        f"add \"draft_vocab_size\": {p.d.get('vocab_size', 'VOCAB')} to the draft's config.json")]
    if p.d.get("vocab_size") is not None and size > p.d["vocab_size"]:
        return [Finding("draft-vocab", ERROR, f"draft_vocab_size {size} exceeds the draft's vocab_size {p.d['vocab_size']}",
                        "the draft's lm_head cannot predict tokens outside the vocabulary",
                        "set draft_vocab_size to at most vocab_size")]
    return []


def draft_model_vocab(p: Pairing) -> list[Finding]:
    """A draft model (method draft_model) samples token ids the target verifies as its own: vLLM 0.32
    refuses a vocabulary size other than the target's at start-up (``verify_equal_vocab_size_if_draft_model``)."""
    if methods.draft_memory(p.cfg.draft.method) != "model" or p.draft is None:
        return []
    tv, dv = p.t.get("vocab_size"), p.d.get("vocab_size")
    if tv is None or dv is None or tv == dv:
        return []
    return [Finding("draft-model-vocab", ERROR, f"the draft model's vocab_size {dv} differs from the target's {tv}",
                    "a draft model proposes token ids the target verifies as its own, so vLLM refuses the pair at start",
                    "use a draft model with the target's tokenizer and vocabulary (for the tiny target: draft=tiny_draft_model)")]


def draft_moe(p: Pairing) -> list[Finding]:
    if not p.llama4_eagle:
        return []
    # vLLM asserts len(config.moe_layers) == 0 on the config transformers builds: moe_layers as given,
    # else derived from the step (a step of 0 without moe_layers is transformers' own error: the
    # transformers-config check reports it). num_local_experts does not matter to a dense head.
    step = p.d.get("interleave_moe_layer_step")
    step = 1 if step is None else step
    if not values.moe_layers(p.d):
        return []
    return [Finding("draft-moe", ERROR,
                    f"draft has MoE layers (moe_layers={p.d.get('moe_layers', 'absent')}, interleave_moe_layer_step={step})",
                    "vLLM's Llama 4 EAGLE head asserts a dense draft (len(moe_layers) == 0)",
                    "set \"moe_layers\": [] in the draft's config.json (a dense head)")]


def no_rope(p: Pairing) -> list[Finding]:
    if not p.llama4_eagle:
        return []
    given, n = p.d.get("no_rope_layers"), p.d.get("num_hidden_layers")
    if isinstance(given, list) and len(given) == n:
        return []
    return [Finding("no-rope-layers", ERROR,
                    f"draft no_rope_layers={given!r} for {n} draft layer(s)",
                    "vLLM appends it behind the target's layers and indexes it per draft layer: "
                    "a wrong length fails at load or gives a layer the wrong positional scheme",
                    f"give exactly one entry per draft layer, e.g. \"no_rope_layers\": {[1] * (n or 1)}")]


def eagle3_aux_layers(p: Pairing) -> list[Finding]:
    """The target layers an EAGLE-3 head reads (vLLM 0.32, ``gpu_model_runner._get_eagle3_aux_layers_from_config``:
    ``eagle_aux_hidden_state_layer_ids`` at the top of config.json, else in ``eagle_config``; without them the
    model's default ``(2, n // 2, n - 3)``). The target returns its state after layer i for each distinct i in
    0..n, in ascending order (``EagleModelMixin``); the head's fc reads ``num_aux_hidden_states`` of them
    (else as many as ``eagle_config`` lists, else 3)."""
    if not p.eagle or p.cfg.draft.method != "eagle3":
        return []
    eagle = p.d.get("eagle_config") if isinstance(p.d.get("eagle_config"), dict) else {}
    if eagle.get("use_aux_hidden_state", True) is False:
        return []
    ids = p.d.get("eagle_aux_hidden_state_layer_ids") or eagle.get("eagle_aux_hidden_state_layer_ids")
    if not ids:
        return []
    layers = p.t.get("num_hidden_layers")
    listed = eagle.get("eagle_aux_hidden_state_layer_ids")
    reads = p.d.get("num_aux_hidden_states") or (len(listed) if isinstance(listed, list) and listed else 3)
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        return [Finding("eagle3-aux-layers", ERROR, f"the EAGLE-3 head's eagle_aux_hidden_state_layer_ids is {ids!r}",
                        "vLLM reads it as a list of target layer numbers", "give a list of integers, e.g. [1, 4, 7]")]
    outside = [i for i in ids if not 0 <= i <= layers]
    if outside:
        return [Finding("eagle3-aux-layers", ERROR,
                        f"the EAGLE-3 head reads target layer(s) {outside}, outside 0..{layers} (the target has {layers})",
                        "the target returns no hidden state there, so the head's fc gets fewer states than it reads",
                        "use a head trained for this target (its eagle_aux_hidden_state_layer_ids name the target's layers)")]
    if len(set(ids)) != reads:
        return [Finding("eagle3-aux-layers", ERROR,
                        f"the EAGLE-3 head's fc reads {reads} hidden states but it names {len(set(ids))} distinct "
                        f"target layer(s) ({ids})",
                        "vLLM returns one state per distinct layer, so fc gets an input of the wrong width",
                        "list one distinct layer per state the head reads (num_aux_hidden_states)")]
    if ids != sorted(ids):
        return [Finding("eagle3-aux-layers", WARNING, f"the EAGLE-3 head lists its target layers out of order ({ids})",
                        f"vLLM hands the states to fc in ascending layer order ({sorted(ids)}), not as listed",
                        "check that the head was trained on the states in ascending order")]
    return []


def compatible(p: Pairing) -> list[Finding]:
    if not p.eagle:
        return []
    out = []
    th, dh = p.t.get("hidden_size"), p.d.get("hidden_size")
    if th != dh:
        out.append(Finding("compatible", ERROR, f"draft hidden_size {dh} differs from the target's {th}",
                           "an EAGLE head consumes the target's hidden states (fc maps 2 x hidden to hidden)",
                           "use a draft trained for this target"))
    tv, dv = p.t.get("vocab_size"), p.d.get("vocab_size")
    if tv != dv:
        out.append(Finding("compatible", ERROR, f"draft vocab_size {dv} differs from the target's {tv}",
                           "the draft shares the target's token embedding and proposes token ids of its vocabulary",
                           "use a draft trained with the target's tokenizer"))
    tt, dt = _tokenizer_digest(p.target), _tokenizer_digest(p.draft)
    if tt and dt and tt != dt:
        out.append(Finding("compatible", WARNING, "draft and target ship different tokenizer vocabularies",
                           "token ids proposed by the draft mean other tokens to the target: nothing is accepted",
                           "use a draft trained with the target's tokenizer, or remove the draft's tokenizer files"))
    for key in ("bos_token_id", "eos_token_id"):
        if key in p.t and key in p.d and p.t[key] != p.d[key]:
            out.append(Finding("compatible", WARNING, f"draft {key} {p.d[key]} differs from the target's {p.t[key]}",
                               "the two models were likely trained with different tokenizers",
                               "check that the draft was trained for this target"))
    return out


def _tokenizer_digest(model: ModelConfig | None) -> str | None:
    directory = model.directory if model else None
    path = directory / "tokenizer.json" if directory else None
    if not path or not path.is_file():
        return None
    data, _ = json_or_none(path, TOKENIZER)
    tok = data.get("model") if isinstance(data, dict) else None
    vocab = tok.get("vocab") if isinstance(tok, dict) else None
    return hashlib.sha256(json.dumps(vocab, sort_keys=True, default=repr).encode()).hexdigest() if vocab else None
