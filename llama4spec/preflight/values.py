"""Checks of a ``config.json``'s values before anything computes with them: pure, no I/O.

The doctor turns each problem into an ERROR finding and the memory planner into a one-line
UserError, so a malformed file never surfaces as a ZeroDivisionError, TypeError or KeyError.
Each problem names the key (``text_config.num_attention_heads``) and what it must be.
"""

from __future__ import annotations

import math
from typing import Any

# Sizes and counts that must be positive integers wherever they appear in the language model's config
# (null is taken as absent: transformers then fills its default).
POSITIVE_INTS = (
    "hidden_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers", "vocab_size",
    "intermediate_size", "intermediate_size_mlp", "num_experts_per_tok", "head_dim",
    "draft_vocab_size", "max_position_embeddings", "attention_chunk_size",
)
NON_NEGATIVE_INTS = ("interleave_moe_layer_step",)
# Read only where the model has MoE layers: a dense model (an EAGLE head with moe_layers [] and any
# num_local_experts, 0 included) loads and runs in vLLM 0.32.
MOE_INTS = ("num_local_experts",)
# The sizes the weights are shaped by: absent, transformers fills its class default (Scout's 5120
# hidden size for llama4_text), not the checkpoint's, and vLLM fails loading the weights. (Llama's
# config class defaults num_key_value_heads to num_attention_heads, which a model without GQA has.)
REQUIRED_SIZES = ("hidden_size", "num_attention_heads", "num_hidden_layers", "vocab_size")
# Llama 4's config class defaults these (8 KV heads, head_dim 128) unless the key is there (null
# derives them from the other sizes).
REQUIRED_LLAMA4 = ("num_key_value_heads", "head_dim")
# Upper bounds far beyond any real model: past them a value is a typo, and lists built from it exhaust memory.
LIMIT = 2**31 - 1
LAYER_LIMIT = 65536
INT_LISTS = ("moe_layers", "no_rope_layers")
# What the planner counts in a Llama 4 vision tower (count.vision): all required once vision_config is given.
VISION_INTS = (
    "hidden_size", "intermediate_size", "num_hidden_layers", "image_size", "patch_size", "num_channels",
    "projector_input_dim", "projector_output_dim", "vision_output_dim",
)
# What the planner needs of the language model; the doctor reads them only when present.
PLANNER_KEYS = ("hidden_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers", "vocab_size")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", str: "a string", list: "a list", dict: "an object", float: "a number"}.get(
        type(value), type(value).__name__)


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else _kind(value)
    return text if len(text) <= 40 else text[:37] + "..."


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def text_of(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's config: ``text_config`` when it is a non-empty object, else the whole file."""
    text = config.get("text_config")
    return text if isinstance(text, dict) and text else config


def moe_layers(text: dict[str, Any]) -> list[Any]:
    """The MoE layers as transformers' Llama 4 config derives them: ``moe_layers`` when given, else
    every ``interleave_moe_layer_step``-th layer (none for a step of 0 or a malformed value)."""
    given, step, layers = text.get("moe_layers"), text.get("interleave_moe_layer_step"), text.get("num_hidden_layers")
    if given is not None:
        return list(given) if isinstance(given, list) else []
    step = 1 if step is None else step
    if not (is_int(step) and step > 0 and is_int(layers) and 0 < layers <= LAYER_LIMIT):
        return []
    return list(range(step - 1, layers, step))


def problems(config: dict[str, Any]) -> list[str]:
    """Every malformed value of a ``config.json`` (already parsed to an object), as 'KEY ...: fix' sentences."""
    out: list[str] = []
    text_config = config.get("text_config")
    if text_config is not None and not isinstance(text_config, dict):
        out.append(f"'text_config' is {_kind(text_config)}, not an object: it must hold the language model's "
                   f"settings (hidden_size, num_attention_heads, ...)")
        return out  # nothing below can be read reliably
    nested = isinstance(text_config, dict) and bool(text_config)
    text, prefix = (text_config, "text_config.") if nested else (config, "")

    for where, d in (("", config),) + (((prefix, text),) if nested else ()):
        if d.get("model_type") is not None and not isinstance(d["model_type"], str):
            out.append(f"'{where}model_type' is {_show(d['model_type'])}: it must be a string such as \"llama4_text\"")
    archs = config.get("architectures")
    if archs is not None and not (isinstance(archs, list) and all(isinstance(a, str) for a in archs)):
        out.append(f"'architectures' is {_show(archs)}: it must be a list of class names such as [\"Llama4ForCausalLM\"]")

    bad = _integers(text, prefix, out)
    _sizes(config, text, prefix, bad, out)
    quant = [config.get("quantization_config")] + ([text.get("quantization_config")] if nested else [])
    for where, q in zip(("", prefix), quant):
        if q is None:
            continue
        if not isinstance(q, dict):
            out.append(f"'{where}quantization_config' is {_show(q)}: it must be an object with a quant_method")
        elif q.get("quant_method") is not None and not isinstance(q["quant_method"], str):
            out.append(f"'{where}quantization_config.quant_method' is {_show(q['quant_method'])}: it must be a "
                       f"string such as \"fp8\"")
    _vision(config.get("vision_config"), out)
    return out


def _integers(text: dict[str, Any], prefix: str, out: list[str]) -> set[str]:
    """The language model's integers and integer lists that are not what they must be, each one's
    problem appended to ``out``; returns their keys."""
    bad: set[str] = set()
    for key in POSITIVE_INTS + NON_NEGATIVE_INTS:
        value, least = text.get(key), 0 if key in NON_NEGATIVE_INTS else 1
        limit = LAYER_LIMIT if key == "num_hidden_layers" else LIMIT
        if value is None:
            continue
        if not (is_int(value) and value >= least):
            out.append(f"'{prefix}{key}' is {_show(value)}: it must be "
                       + ("a positive integer" if least else "an integer of 0 or more"))
            bad.add(key)
        elif value > limit:
            out.append(f"'{prefix}{key}' is {_show(value)}: that is beyond any real model (at most {limit})")
            bad.add(key)
    for key in INT_LISTS:
        value = text.get(key)
        if value is not None and not (isinstance(value, list) and all(is_int(v) for v in value)):
            out.append(f"'{prefix}{key}' is {_show(value)}: it must be a list of integers")
            bad.add(key)
    return bad


def _sizes(config: dict[str, Any], text: dict[str, Any], prefix: str, bad: set[str], out: list[str]) -> None:
    """The sizes the weights are shaped by that are absent or do not fit together (``bad``: keys
    already reported malformed, grown by those found here), appended to ``out``."""
    llama4 = text.get("model_type") == "llama4_text" or config.get("model_type") == "llama4"
    absent = [k for k in REQUIRED_SIZES if text.get(k) is None]
    absent += [k for k in REQUIRED_LLAMA4 if llama4 and k not in text]
    for key in absent:
        if key not in bad:
            out.append(f"'{prefix}{key}' is absent: transformers would fill its class default, not this model's "
                       f"size, and the weights would not load; give the model's {key}")
            bad.add(key)
    if moe_layers(text):
        for key in MOE_INTS:
            value = text.get(key)
            if value is not None and not (is_int(value) and 0 < value <= LIMIT):
                out.append(f"'{prefix}{key}' is {_show(value)}: a model with MoE layers needs a positive integer")
                bad.add(key)
    hidden, heads = text.get("hidden_size"), text.get("num_attention_heads")
    if text.get("head_dim") is None and hidden is not None and heads is not None \
            and not bad & {"hidden_size", "num_attention_heads", "head_dim"}:
        if hidden % heads:
            out.append(f"'{prefix}head_dim' is absent and '{prefix}hidden_size' {hidden} is not divisible by "
                       f"'{prefix}num_attention_heads' {heads}: give head_dim, or sizes that divide")
    experts, top_k = text.get("num_local_experts"), text.get("num_experts_per_tok")
    if is_int(experts) and is_int(top_k) and experts > 0 and top_k > experts and moe_layers(text):
        out.append(f"'{prefix}num_experts_per_tok' {top_k} exceeds '{prefix}num_local_experts' {experts}: "
                   f"a token cannot be routed to more experts than there are")
    layers, moe = text.get("num_hidden_layers"), text.get("moe_layers")
    if is_int(layers) and layers > 0 and "moe_layers" not in bad and isinstance(moe, list):
        outside = [i for i in moe if not 0 <= i < layers]
        if outside:
            out.append(f"'{prefix}moe_layers' has {outside[:5]} outside the {layers} layer(s): give layer indices "
                       f"from 0 to {layers - 1}")


def _vision(vision: Any, out: list[str]) -> None:
    """The vision tower's problems (``vision_config``, None when absent), appended to ``out``."""
    if vision is not None and not isinstance(vision, dict):
        out.append(f"'vision_config' is {_kind(vision)}, not an object")
    elif vision:
        for key in VISION_INTS:
            value = vision.get(key)
            if not (is_int(value) and 0 < value <= LIMIT):
                state = "absent" if value is None else _show(value)
                out.append(f"'vision_config.{key}' is {state}: it must be a positive integer")
        ratio = vision.get("pixel_shuffle_ratio")
        if not (isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and math.isfinite(ratio) and ratio > 0):
            state = "absent" if ratio is None else _show(ratio)
            out.append(f"'vision_config.pixel_shuffle_ratio' is {state}: it must be a positive number")


def planner_problems(config: dict[str, Any]) -> list[str]:
    """``problems`` plus the keys the memory planner cannot do without."""
    found = problems(config)
    if found:
        return found
    text = text_of(config)
    prefix = "text_config." if text is not config else ""
    for key in PLANNER_KEYS:
        if text.get(key) is None:
            found.append(f"'{prefix}{key}' is absent: the memory plan needs it")
    if text.get("intermediate_size") is None and text.get("intermediate_size_mlp") is None:
        found.append(f"'{prefix}intermediate_size' is absent: the memory plan needs the MLP size")
    if text.get("intermediate_size") is None and text.get("model_type") == "llama4_text" and text.get("num_local_experts"):
        found.append(f"'{prefix}intermediate_size' is absent: the memory plan needs the experts' size")
    return found
