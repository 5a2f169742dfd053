"""How vLLM 0.32 lays out the KV cache for an EAGLE-family draft, read from config.json alone
(pure; the doctor's ``prefix-caching`` and ``hybrid-kv-cache`` rules).

What vLLM does, and where:

- ``VllmConfig.__post_init__`` (``vllm/config/vllm.py``) uses the hybrid KV cache manager where the
  platform supports it (``support_hybrid_kv_cache``: CUDA, ROCm, XPU and the CPU build all do),
  except when the target has chunked local attention (``attention_chunk_size``) and the
  speculative method is EAGLE-family
  (``SpeculativeConfig.use_eagle()``: eagle, eagle3, mtp, dflash, dspark). A server that asks for
  the manager there (``--no-disable-hybrid-kv-cache-manager``) is refused at start.
- Without that manager, ``unify_hybrid_kv_cache_specs`` (``vllm/v1/core/kv_cache_utils.py``) turns
  every chunked-local layer into full attention, but only where some layer already has full
  attention. With it, chunked layers keep a cache group of their own. A Llama 4 layer has chunked
  attention unless it is a NoPE layer (``no_rope_layers[i] == 0``;
  ``vllm/model_executor/models/llama4.py``), the EAGLE head's layers included.
- The assertion "Hybrid KV cache is not supported for eagle + chunked local attention"
  (``ChunkedLocalAttentionManager.find_longest_cache_hit``) is reached, at the first request, when
  such a chunked-local group is left, prefix caching is on, and the EAGLE block drop is on
  (``disable_eagle_block_drop`` false).
"""

from __future__ import annotations

from typing import Any

FORCE_HYBRID = "--no-disable-hybrid-kv-cache-manager"  # vLLM's flag that asks for the manager
DEFAULT_NOPE_INTERVAL = 4  # transformers' Llama4TextConfig.no_rope_layer_interval
DEFAULT_CHUNK = 8192  # transformers' Llama4TextConfig.attention_chunk_size (null turns chunking off)


def chunk_size(text: dict[str, Any]) -> int | None:
    """The attention chunk size vLLM reads (``ModelConfig.attention_chunk_size``): a Llama 4 text
    config without the key has transformers' class default."""
    default = DEFAULT_CHUNK if text.get("model_type") == "llama4_text" else None
    return text.get("attention_chunk_size", default)


def chunked_layers(text: dict[str, Any]) -> list[bool]:
    """Per layer of a Llama 4 text config: whether vLLM builds it with chunked local attention
    (``no_rope_layers`` as transformers fills it when absent or empty)."""
    layers = int(text.get("num_hidden_layers") or 0)
    if not chunk_size(text):
        return [False] * layers
    rope = text.get("no_rope_layers") or [
        int((i + 1) % int(text.get("no_rope_layer_interval") or DEFAULT_NOPE_INTERVAL) != 0) for i in range(layers)]
    return [bool(r) for r in rope[:layers]]


def pair_layers(target: dict[str, Any], draft: dict[str, Any] | None, draft_llama4: bool) -> list[bool]:
    """Per layer of the target, then of the draft: chunked local attention. A draft other than a
    Llama 4 head has full-attention layers."""
    layers = chunked_layers(target)
    if draft is not None:
        layers += chunked_layers(draft) if draft_llama4 else [False] * max(1, int(draft.get("num_hidden_layers") or 1))
    return layers


def hybrid_manager(target: dict[str, Any], eagle: bool, extra_args: list[str]) -> bool:
    """vLLM keeps the hybrid KV cache manager (where it does not refuse the server's flags)."""
    return not (eagle and chunk_size(target)) and forces_hybrid(extra_args) is not False


def chunked_group_left(layers: list[bool], hybrid: bool) -> bool:
    """A chunked-local KV cache group is left: any chunked layer with the hybrid manager, else only
    where no layer has full attention to promote the chunked ones to."""
    return any(layers) if hybrid else bool(layers) and all(layers)


def forces_hybrid(extra_args: list[str]) -> bool | None:
    """The server's own flags on the hybrid KV cache manager: True asks for it, False turns it off,
    None leaves it to vLLM (the last of the pair wins)."""
    for arg in reversed(extra_args):
        if arg in (FORCE_HYBRID, "--disable-hybrid-kv-cache-manager"):
            return arg == FORCE_HYBRID
    return None
