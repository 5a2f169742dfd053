"""The doctor's prefix-caching rules agree with vLLM 0.32's own KV cache logic, asked of vLLM itself.

A Llama 4 target has chunked local attention, and vLLM asserts "Hybrid KV cache is not supported
for eagle + chunked local attention" in the chunked-local cache manager's prefix lookup. Whether a
request can reach it is vLLM's decision in three steps, each run here as vLLM runs it, without an
engine:

1. ``EngineArgs(...).create_engine_config()``: ``VllmConfig.__post_init__`` turns the hybrid KV
   cache manager off for chunked attention + an EAGLE-family draft, or refuses the config when the
   manager was asked for. Every platform of 0.32 supports the manager (``support_hybrid_kv_cache``
   is True on CUDA, ROCm, XPU and CPU), so this build decides as a GPU's does;
2. ``get_kv_cache_groups`` over the layers' cache specs, built as vLLM's Llama 4 layers build them
   (the line that picks chunked attention is read from vLLM's source, and checked to be still there);
3. the prefix lookup of a coordinator made by ``get_kv_cache_coordinator`` from those groups, with
   the config's prefix caching and EAGLE block drop, as the scheduler makes it.

The doctor's verdict (any ERROR) must be the same on every case: tiny pairs that differ in which
layers are NoPE (full attention), times prefix caching, ``disable_eagle_block_drop`` and the flag
that asks for the hybrid manager.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not importable here: the doctor cannot be checked against it")

from llama4spec.config.compose import compose_config  # noqa: E402
from llama4spec.preflight import ERROR, examine, pairing  # noqa: E402
from llama4spec.preflight.kvcache import FORCE_HYBRID  # noqa: E402
from llama4spec.tiny.build import ensure_built  # noqa: E402
from tests.helpers import DROP, edited  # noqa: E402

MAX_MODEL_LEN = 256
LAYOUT = "NHD"  # the KV cache layout a GPU attention backend reports first (the grouping does not depend on it)
CHUNKED_LINE = "use_chunked_local_attn = not self.nope and config.attention_chunk_size"  # llama4.py
DRAFT_LINE = "self.config.no_rope_layers = [0] * start_layer_id + self.config.no_rope_layers"  # llama4_eagle.py

TARGETS = {  # the tiny target has 8 layers, NoPE at 3 and 7
    "tiny": {},
    "all-chunked": {"no_rope_layers": [1] * 8},
    "nope-by-interval": {"no_rope_layers": DROP},  # transformers fills one NoPE layer in 4
    "all-chunked-by-interval": {"no_rope_layers": [], "no_rope_layer_interval": 100},
    "chunk-size-by-default": {"attention_chunk_size": DROP},  # transformers' class default: 8192
    "no-chunking": {"attention_chunk_size": None},
}
DRAFTS = {"chunked-head": {}, "nope-head": {"no_rope_layers": [0]}}
# (serve.enable_prefix_caching, draft.disable_eagle_block_drop, ask for the hybrid manager)
SETTINGS = [(True, None, False), (None, None, False), (False, None, False), (True, True, False),
            (False, None, True)]


@pytest.fixture(scope="module")
def tiny() -> Path:
    return ensure_built()


def _layer_specs(hf, block_size: int, prefix: str, start: int = 0) -> dict:
    """Each layer's KV cache spec as vLLM's Llama 4 decoder layer gives it (ChunkedLocalAttention
    where ``no_rope_layers[i]`` is set and the config has a chunk size, else Attention)."""
    import torch
    from vllm.v1.kv_cache_interface import ChunkedLocalAttentionSpec, FullAttentionSpec

    head = getattr(hf, "head_dim", None) or hf.hidden_size // hf.num_attention_heads
    common = {"block_size": block_size, "num_kv_heads": hf.num_key_value_heads, "head_size": head,
              "dtype": torch.float32}
    specs = {}
    for i in range(hf.num_hidden_layers):
        chunked = bool(hf.no_rope_layers[i]) and bool(hf.attention_chunk_size)
        specs[f"{prefix}.{start + i}.self_attn.attn"] = (
            ChunkedLocalAttentionSpec(**common, attention_chunk_size=hf.attention_chunk_size) if chunked
            else FullAttentionSpec(**common))
    return specs


def _first_lookup(config) -> str | None:
    """Steps 2 and 3: the cache groups of the pair's layers, then one prefix lookup."""
    from vllm.v1.core import kv_cache_utils
    from vllm.v1.core.kv_cache_coordinator import get_kv_cache_coordinator
    from vllm.v1.kv_cache_interface import KVCacheConfig

    size = config.cache_config.block_size
    config.cache_config.kv_cache_layout = LAYOUT  # what the engine core resolves before it groups the layers
    target = config.model_config.hf_text_config
    draft = config.speculative_config.draft_model_config.hf_text_config
    specs = {**_layer_specs(target, size, "model.layers"),
             **_layer_specs(draft, size, "draft.layers", target.num_hidden_layers)}
    groups = kv_cache_utils.get_kv_cache_groups(config, specs)
    coordinator = get_kv_cache_coordinator(
        KVCacheConfig(num_blocks=64, kv_cache_tensors=[], kv_cache_groups=groups), max_model_len=MAX_MODEL_LEN,
        max_in_flight_tokens=config.max_in_flight_tokens, use_eagle=config.speculative_config.use_eagle_block_drop(),
        enable_caching=config.cache_config.enable_prefix_caching, enable_kv_cache_events=False, dcp_world_size=1,
        pcp_world_size=1, scheduler_block_size=size, hash_block_size=size)
    try:
        coordinator.find_longest_cache_hit([bytes([i]) * 32 for i in range(2)], 2 * size)
    except AssertionError as err:
        return f"first request: AssertionError: {err}"
    return None


def vllm_verdict(target: Path, draft: Path, prefix: bool | None, keep_block: bool | None, hybrid: bool) -> str | None:
    """Why vLLM 0.32 refuses this pair, or fails at its first request (None: it runs)."""
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.models import llama4, llama4_eagle
    from vllm.platforms import current_platform

    assert CHUNKED_LINE in inspect.getsource(llama4) and DRAFT_LINE in inspect.getsource(llama4_eagle), \
        "vLLM's Llama 4 layers choose their attention otherwise now: update _layer_specs"
    spec = {"method": "eagle", "model": str(draft), "num_speculative_tokens": 3}
    if keep_block is not None:
        spec["disable_eagle_block_drop"] = keep_block
    assert current_platform.support_hybrid_kv_cache(), "this platform has no hybrid KV cache manager"
    try:
        config = EngineArgs(model=str(target), dtype="float32", max_model_len=MAX_MODEL_LEN, enforce_eager=True,
                            enable_prefix_caching=prefix, disable_hybrid_kv_cache_manager=False if hybrid else None,
                            speculative_config=spec).create_engine_config()
    except Exception as err:  # noqa: BLE001 - whatever vLLM raises is its refusal
        return f"create_engine_config: {type(err).__name__}: {str(err)[:200]}"
    return _first_lookup(config)


def doctor_verdict(target: Path, draft: Path, prefix: bool | None, keep_block: bool | None, hybrid: bool) -> list[str]:
    overrides = ["target=tiny", "memory=cpu", f"target.model={target}", "draft=tiny_eagle", f"draft.model={draft}",
                 f"memory.max_model_len={MAX_MODEL_LEN}",
                 f"serve.enable_prefix_caching={'null' if prefix is None else str(prefix).lower()}"]
    if keep_block is not None:
        overrides.append(f"draft.disable_eagle_block_drop={str(keep_block).lower()}")
    if hybrid:
        overrides.append(f'serve.extra_args=["{FORCE_HYBRID}"]')
    cfg = compose_config(overrides).cfg
    return [f.line() for f in examine(pairing(cfg, network=False)) if f.severity == ERROR]


@pytest.fixture(scope="module")
def pairs(tiny: Path, tmp_path_factory) -> dict[tuple[str, str], tuple[Path, Path]]:
    base = tmp_path_factory.mktemp("pairs")
    targets = {name: edited(tiny / "target", base / f"target-{name}", **change) for name, change in TARGETS.items()}
    drafts = {name: edited(tiny / "draft", base / f"draft-{name}", **change) for name, change in DRAFTS.items()}
    return {(t, d): (targets[t], drafts[d]) for t in targets for d in drafts}


@pytest.mark.parametrize("setting", SETTINGS, ids=[f"prefix={p}-keep_block={k}-hybrid={h}" for p, k, h in SETTINGS])
@pytest.mark.parametrize("draft_name", list(DRAFTS))
@pytest.mark.parametrize("target_name", list(TARGETS))
def test_doctor_agrees_with_vllm_on_prefix_caching(pairs, target_name: str, draft_name: str, setting) -> None:
    target, draft = pairs[(target_name, draft_name)]
    vllm_says = vllm_verdict(target, draft, *setting)
    doctor_says = doctor_verdict(target, draft, *setting)
    assert bool(doctor_says) == bool(vllm_says), \
        f"{target_name} {draft_name} {setting}: vLLM: {vllm_says}; doctor: {doctor_says}"


def test_the_cases_reach_both_verdicts(pairs) -> None:
    """The boundary is crossed: vLLM runs the tiny pair with prefix caching on, and fails an
    all-chunked pair's first request under the block drop, which disable_eagle_block_drop avoids."""
    assert vllm_verdict(*pairs[("tiny", "chunked-head")], True, None, False) is None
    failing = vllm_verdict(*pairs[("all-chunked", "chunked-head")], True, None, False)
    assert failing and "Hybrid KV cache is not supported for eagle + chunked local attention" in failing
    assert vllm_verdict(*pairs[("all-chunked", "chunked-head")], True, True, False) is None
    assert "explicitly enabled" in vllm_verdict(*pairs[("tiny", "chunked-head")], False, None, True)
    # a target without chunking keeps the hybrid manager, so the head's chunked layer has its own group
    head_only = vllm_verdict(*pairs[("no-chunking", "chunked-head")], True, None, False)
    assert head_only and "eagle + chunked local attention" in head_only


def test_the_eagle_family_is_the_one_vllm_reads_the_block_drop_for() -> None:
    """``draft.disable_eagle_block_drop`` is allowed exactly where vLLM's ``use_eagle_block_drop`` reads it."""
    from vllm.config.speculative import SpeculativeConfig

    from llama4spec.config import methods

    family = {m.name for m in methods.TABLE if m.eagle_family}
    for name in {m.name for m in methods.TABLE}:
        probe = SpeculativeConfig.__new__(SpeculativeConfig)
        object.__setattr__(probe, "method", name)
        object.__setattr__(probe, "disable_eagle_block_drop", False)
        assert probe.use_eagle_block_drop() == (name in family), name
