"""Pure builders: the engine arguments a config implies (no vLLM import; the one fact read from the
installation is which build it is, ``build.vllm_cli()``, detected once)."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from typing import Any

from llama4spec.config import methods
from llama4spec.config.schema import Config
from llama4spec.config.synthetic import synthetic_settings
from llama4spec.engine import build

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"  # how the CPU build starts a server
PER_REQUEST_METRICS = "per_request_spec_decode_metrics"


def speculative_config(cfg: Config) -> dict[str, Any] | None:
    """The ``speculative_config`` dict vLLM takes, or None without a draft."""
    d = cfg.draft
    if d.method is None:
        return None
    spec: dict[str, Any] = {"method": d.method}
    if d.model:
        spec["model"] = d.model
        if d.revision:
            spec["revision"] = d.revision  # vLLM's SpeculativeConfig.revision: the draft's commit, branch or tag
    spec["num_speculative_tokens"] = cfg.lookahead
    if methods.prompt_lookup(d.method):
        spec["prompt_lookup_min"] = d.prompt_lookup_min
        spec["prompt_lookup_max"] = d.prompt_lookup_max
    elif cfg.parallel.draft_tensor_parallel_size is not None:
        spec["draft_tensor_parallel_size"] = cfg.parallel.draft_tensor_parallel_size
    if d.max_model_len is not None:
        spec["max_model_len"] = d.max_model_len
    if d.lookahead_schedule:
        spec["num_speculative_tokens_per_batch_size"] = [list(r) for r in d.lookahead_schedule]
    if d.sample_method is not None:
        spec["draft_sample_method"] = d.sample_method
    if d.disable_eagle_block_drop is not None:
        spec["disable_eagle_block_drop"] = d.disable_eagle_block_drop
    spec.update(synthetic_settings(d))
    return spec


@dataclass(frozen=True)
class ModelRef:
    """One model repository vLLM loads for a config."""

    role: str  # target | draft | tokenizer
    key: str  # the config key that names it: target.model, draft.model, target.tokenizer
    ref: str  # hub id or local directory
    revision: str | None  # commit, branch or tag; None: the default branch


def model_refs(cfg: Config) -> list[ModelRef]:
    """The models vLLM loads for ``cfg``, each once: the target, an EAGLE draft, a separate tokenizer.
    The tokenizer is read at the target's revision, as vLLM does (its tokenizer_revision defaults to
    the revision)."""
    t, d = cfg.target, cfg.draft
    refs = [ModelRef("target", "target.model", t.model, t.revision)]
    if methods.needs_model(d.method) and d.model:
        refs.append(ModelRef("draft", "draft.model", d.model, d.revision))
    if t.tokenizer and t.tokenizer != t.model:
        refs.append(ModelRef("tokenizer", "target.tokenizer", t.tokenizer, t.revision))
    seen: set[tuple[str, str | None]] = set()
    unique = []
    for r in refs:
        if (r.ref, r.revision) not in seen:
            seen.add((r.ref, r.revision))
            unique.append(r)
    return unique


def engine_args(cfg: Config) -> dict[str, Any]:
    """Engine arguments by vLLM's names, in a stable order; None values are left to vLLM."""
    t, p, m = cfg.target, cfg.parallel, cfg.memory
    args: dict[str, Any] = {
        "model": t.model,
        "tokenizer": t.tokenizer,
        "revision": t.revision,
        "dtype": None if t.dtype == "auto" else t.dtype,
        "quantization": t.quantization,
        "trust_remote_code": True if t.trust_remote_code else None,
        "tensor_parallel_size": p.tensor_parallel_size if p.tensor_parallel_size != 1 else None,
        "pipeline_parallel_size": p.pipeline_parallel_size if p.pipeline_parallel_size != 1 else None,
        "data_parallel_size": p.data_parallel_size if p.data_parallel_size != 1 else None,
        "distributed_executor_backend": p.distributed_executor_backend,
        "gpu_memory_utilization": m.gpu_memory_utilization,
        "max_model_len": m.max_model_len,
        "max_num_seqs": m.max_num_seqs,
        "max_num_batched_tokens": m.max_num_batched_tokens,
        "kv_cache_dtype": None if m.kv_cache_dtype == "auto" else m.kv_cache_dtype,
        "enforce_eager": True if m.enforce_eager else None,
        "enable_prefix_caching": cfg.serve.enable_prefix_caching,
        "async_scheduling": cfg.serve.async_scheduling,
        "speculative_config": speculative_config(cfg),
    }
    return {k: v for k, v in args.items() if v is not None}


def prefix_caching_words(cfg: Config) -> str:
    """A server's prefix caching in words (the dry run's line): on or off, whether that is vLLM's
    default, and under an EAGLE-family draft whether vLLM drops the last block of each cache hit."""
    on = cfg.serve.enable_prefix_caching
    said = "on (vLLM's default)" if on is None else ("on" if on else "off") + f" (serve.enable_prefix_caching={str(on).lower()})"
    if on is False or not methods.eagle_family(cfg.draft.method):
        return said
    kept = cfg.draft.disable_eagle_block_drop
    return said + (", last block of each hit kept (draft.disable_eagle_block_drop=true)" if kept else
                   ", last block of each hit dropped under EAGLE (vLLM's default)")


def llm_kwargs(cfg: Config) -> dict[str, Any]:
    """Keyword arguments for ``vllm.LLM(...)`` (offline)."""
    kwargs = engine_args(cfg)
    kwargs["seed"] = cfg.generation.seed
    kwargs["disable_log_stats"] = False  # acceptance counters come from get_metrics()
    if cfg.draft.method is not None:
        # each request's own counters (per verify step): the steps that drafted each position (the
        # denominator of a per-position rate where draft lengths vary), and acceptance by temperature
        kwargs["per_request_spec_decode_metrics"] = "detailed"
    return kwargs


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def serve_flags(cfg: Config) -> list[str]:
    """The flags after the model in ``vllm serve MODEL ...``."""
    s = cfg.serve
    args = engine_args(cfg)
    args.pop("model")
    flags = ["--host", s.host, "--port", str(s.port)]
    if s.served_model_name:
        flags += ["--served-model-name", s.served_model_name]
    for key, value in args.items():
        if key == "speculative_config":
            flags += [_flag(key), json.dumps(value, separators=(",", ":"))]
        elif isinstance(value, bool):
            flags.append(_flag(key) if value else "--no-" + key.replace("_", "-"))
        else:
            flags += [_flag(key), str(value)]
    if "speculative_config" in args:  # each response carries its request's acceptance (vLLM refuses it without a draft)
        # with the per-step arrays where draft lengths vary: the steps that drafted each position
        varying = methods.varies(cfg.draft.method) or bool(cfg.draft.lookahead_schedule)
        flags += [_flag(PER_REQUEST_METRICS), "detailed" if varying else "summary"]
    return flags + list(s.extra_args)


def serve_argv(cfg: Config) -> list[str]:
    """The ``vllm serve`` command a user could paste (the API key comes from the environment)."""
    return ["vllm", "serve", cfg.target.model, *serve_flags(cfg)]


def server_exec_argv(cfg: Config) -> list[str]:
    """The argv that starts the server: ``vllm serve`` (GPU build) or the API server module (CPU build)."""
    if build.vllm_cli():
        return serve_argv(cfg)
    return [sys.executable, "-m", API_SERVER_MODULE, "--model", cfg.target.model, *serve_flags(cfg)]


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def shell_line(argv: list[str]) -> str:
    return shlex.join(argv)


def engine_env(cfg: Config) -> dict[str, str]:
    """Environment variables the engine needs beyond the caller's (CPU build knobs, user env)."""
    env = dict(cfg.env)
    if cfg.memory.cpu_kvcache_space_gib is not None:
        env["VLLM_CPU_KVCACHE_SPACE"] = str(cfg.memory.cpu_kvcache_space_gib)
    return env
