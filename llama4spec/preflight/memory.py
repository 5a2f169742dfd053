"""The memory plan per device, from config dicts alone: pure arithmetic, no I/O.

Mirrors how vLLM 0.32 sizes memory: the budget is ``gpu_memory_utilization`` x device memory;
weights, the profiled working memory and runtime overhead come off it; the rest is KV cache, shared
by the target's and the draft's attention layers. With an EAGLE draft on a Llama 4 target vLLM
turns the hybrid KV cache manager off, so chunked-attention layers then keep every token; only
without EAGLE (on GPUs) are they capped at their chunk plus the tokens in flight.

Where vLLM 0.32 puts the draft: an EAGLE/EAGLE-3 head is built with the target's parallel config
(``SpecDecodeBaseProposer._create_draft_vllm_config`` in v1/spec_decode/llm_base_proposer.py, and
``load_eagle_model`` in the V2 runner), so it is sharded over the target's TP ranks whatever
``draft_tensor_parallel_size`` says; only its ``fc`` and norms are whole on every rank. The drafter
exists on the last pipeline stage only (gpu_model_runner.py: ``get_pp_group().is_last_rank``), so the
draft's weights and KV layers, and the logits, are there; there the target's embedding is absent and
the head keeps its own. Every stage gets the KV blocks of the fullest (``get_kv_cache_configs`` takes
the smallest count), so the plan reports the per-device figures of the stage with the least room.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

from llama4spec.config import methods
from llama4spec.config.schedule import max_k
from llama4spec.config.schema import Config
from llama4spec.errors import UserError
from llama4spec.preflight import count, values

GIB = 1024**3
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "fp8": 1, "float8": 1}
FP8_METHODS = ("fp8", "fbgemm_fp8", "modelopt", "compressed-tensors", "ptpc_fp8")
INT4_METHODS = ("awq", "gptq", "awq_marlin", "gptq_marlin", "bitsandbytes")
DEFAULT_BATCHED_TOKENS = 8192  # vLLM's usual default on GPUs
DEFAULT_NUM_SEQS = 256


def dtype_bytes(cfg: Config, target: dict[str, Any]) -> int:
    dtype = cfg.target.dtype
    if dtype == "auto":
        text = values.text_of(target)
        dtype = target.get("torch_dtype") or text.get("torch_dtype") or "bfloat16"
    return DTYPE_BYTES.get(str(dtype).replace("torch.", ""), 2)


def linear_bytes(quant: str | None, model_bytes: int) -> float:
    """Bytes per parameter of the decoder's linear layers under a quantization method."""
    if not quant:
        return model_bytes
    if quant in FP8_METHODS or quant.startswith("fp8"):
        return 1
    if quant in INT4_METHODS:
        return 0.5
    return model_bytes


def quantization(override: str | None, config: dict[str, Any]) -> str | None:
    qc = config.get("quantization_config") or values.text_of(config).get("quantization_config")
    method = qc.get("quant_method") if isinstance(qc, dict) else None
    return override or (method if isinstance(method, str) else None)


def not_converted(config: dict[str, Any], quant: str | None) -> list[str]:
    """Module names an FP8 checkpoint leaves in the model dtype: its quantization_config's
    ``modules_to_not_convert`` (for ``fp8``, ``ignored_layers`` first, as vLLM's Fp8Config reads them);
    none when ``quant`` is not the checkpoint's own FP8 method (online quantization converts everything)."""
    qc = config.get("quantization_config") or values.text_of(config).get("quantization_config")
    if not isinstance(qc, dict) or not quant or qc.get("quant_method") != quant or linear_bytes(quant, 2) != 1:
        return []
    names = (qc.get("ignored_layers") if quant == "fp8" else None) or qc.get("modules_to_not_convert")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def weight_bytes(p: count.Params, quant: str | None, model_bytes: int, tp: int = 1) -> int:
    """Bytes of ``p``'s weights on one of ``tp`` ranks (the whole model for tp=1): sharded parts divided,
    parts every rank holds whole (``whole_*``, integer tables) counted in full."""
    lb = linear_bytes(quant, model_bytes)
    sharded = (p.linear - p.whole_linear) * lb + (p.other - p.whole_other) * model_bytes
    whole = p.whole_linear * lb + p.whole_other * model_bytes + p.buffer_bytes
    return math.ceil(sharded / tp) + math.ceil(whole)


def kv_heads_per_rank(kv_heads: int, tp: int) -> int:
    """KV heads one rank stores: split when TP divides them, else replicated (one per rank)."""
    return kv_heads // tp if kv_heads >= tp else 1


@dataclass
class KvLayers:
    """Attention layers on one device: per-token bytes of full layers and of chunked ones."""

    full: int = 0  # bytes per token over layers that keep every token
    chunked: int = 0  # bytes per token over chunked-attention layers
    chunk: int = 0  # their chunk size (0: none)

    @property
    def per_token(self) -> int:
        return self.full + self.chunked

    def per_sequence(self, length: int, in_flight: int, capped: bool) -> int:
        held = min(self.chunk + in_flight, length) if (capped and self.chunk) else length
        return self.full * length + self.chunked * held


def pp_stages(layers: int, pp: int) -> list[range]:
    """The layers of each pipeline stage, as vLLM 0.32's ``get_pp_indices`` splits them without
    VLLM_PP_LAYER_PARTITION: evenly, the remainder to the stages before the last, nearest it first."""
    sizes = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        sizes[-i] += 1
    starts = [sum(sizes[:s]) for s in range(pp)]
    return [range(start, start + size) for start, size in zip(starts, sizes)]


def kv_layers(text: dict[str, Any], tp: int, layers: range | None, kv_bytes: int) -> KvLayers:
    """The attention layers ``layers`` (all when None) of one device, KV heads sharded over ``tp`` ranks."""
    per_layer = 2 * kv_heads_per_rank(text["num_key_value_heads"], tp) * count.head_dim(text) * kv_bytes
    layers = range(text["num_hidden_layers"]) if layers is None else layers
    chunked = len(set(count.chunked_layers(text)).intersection(layers))
    return KvLayers(full=(len(layers) - chunked) * per_layer, chunked=chunked * per_layer, chunk=text.get("attention_chunk_size") or 0)


@dataclass
class MemoryPlan:
    hardware: str
    device: str
    devices: int  # tensor x pipeline parallel
    nnodes: int
    device_memory: int  # bytes per device
    utilization: float
    max_model_len: int
    max_num_seqs: int
    target_params: count.Params
    draft_params: count.Params | None
    target_weights: int  # bytes, whole model
    draft_weights: int
    weights_per_device: int  # on a device of the reported stage (the fullest: the last, which holds the draft)
    kv_per_token_target: int  # bytes per token per device, every token kept
    kv_per_token_draft: int
    kv_per_sequence: int  # bytes per device for one sequence at max_model_len
    chunk_capped: bool
    activation: int  # profiled forward pass of max_num_batched_tokens (estimate)
    verify: int  # logits and probabilities of lookahead+1 tokens for max_num_seqs sequences
    overhead: int
    kv_budget: int  # bytes per device left for the KV cache
    kv_explicit: bool  # the KV cache size was given (CPU build), not derived
    kv_tokens: int  # as vLLM reports at start-up: concurrency x max_model_len
    concurrency: float  # sequences at max_model_len that fit
    draft_per_device: int = 0  # draft weight bytes on a device of the last stage (sharded over the target's TP)
    stage: int = 0  # the pipeline stage reported (0-based): the one with the least KV room
    stages: int = 1  # pipeline_parallel_size
    problems: list[str] = field(default_factory=list)
    suggestions: list[tuple[str, int]] = field(default_factory=list)  # (overrides, kv tokens after)

    @property
    def fits(self) -> bool:
        return not self.problems


def _text(config: dict[str, Any]) -> dict[str, Any]:
    return values.text_of(config)


def check_configs(cfg: Config, target: Any, draft: Any) -> None:
    """UserError, one line per problem, when a config.json value would break the arithmetic below."""
    found = []
    for role, config, ref in (("target", target, cfg.target.model), ("draft", draft, cfg.draft.model)):
        if config is None and role == "draft":
            continue
        where = f"{role} config.json ({role}.model={ref})"
        if not isinstance(config, dict):
            found.append(f"{where} holds {type(config).__name__}, not an object; restore the model's config.json")
            continue
        found += [f"{where}: {problem}; fix the file to plan memory" for problem in values.planner_problems(config)]
    if found:
        raise UserError(*found)


def memory_plan(cfg: Config, target: dict[str, Any], draft: dict[str, Any] | None, device_memory_gib: float) -> MemoryPlan:
    """The plan for ``cfg`` on ``cfg.hardware`` with ``device_memory_gib`` per device (UserError on a malformed config.json)."""
    check_configs(cfg, target, draft if methods.reads_draft_config(cfg.draft.method) else None)
    t, m, par, hw = _text(target), cfg.memory, cfg.parallel, cfg.hardware
    tp, pp = par.tensor_parallel_size, par.pipeline_parallel_size
    method = cfg.draft.method
    eagle = methods.draft_memory(method) == "head" and draft is not None
    whole = methods.draft_memory(method) == "model" and draft is not None  # a draft model: every weight its own
    model_bytes = dtype_bytes(cfg, target)
    kv_bytes = 1 if m.kv_cache_dtype.startswith("fp8") else model_bytes

    tquant = quantization(cfg.target.quantization, target)
    tparams = count.model(target, keep=not_converted(target, tquant))
    twb = weight_bytes(tparams, tquant, model_bytes)
    dparams, dwb, ddev = _draft_weights(method, target, draft, eagle, whole, model_bytes, tp, pp)

    length = m.max_model_len or t.get("max_position_embeddings") or 8192
    seqs = m.max_num_seqs or DEFAULT_NUM_SEQS
    batched = m.max_num_batched_tokens or max(DEFAULT_BATCHED_TOKENS, 0)
    capped = hw.device == "cuda" and not eagle
    dkv = kv_layers(_text(draft), tp, None, kv_bytes) if eagle or whole else KvLayers()

    h = t["hidden_size"]
    ff = (t.get("intermediate_size_mlp") or t["intermediate_size"]) if not count.moe_layers(t) else 2 * t["intermediate_size"]
    activation = batched * model_bytes * (6 * h + 3 * ff // tp)
    verify = _verify_bytes(cfg, t, draft if eagle or whole else None, seqs)
    overhead = int(hw.runtime_overhead_gib * GIB)
    memory = int(device_memory_gib * GIB)
    util = m.gpu_memory_utilization if m.gpu_memory_utilization is not None else 0.92
    explicit = hw.device == "cpu" and m.cpu_kvcache_space_gib is not None

    # Each pipeline stage's devices: the target's share of weights and its own layers; the last stage
    # adds the draft's weights, its KV layers and the logits. vLLM gives every stage the KV blocks of
    # the fullest one, so that stage is the one reported (the last on ties).
    stages = []
    for stage, layers in enumerate(pp_stages(t["num_hidden_layers"], pp)):
        last = stage == pp - 1
        weights = math.ceil(twb / (tp * pp)) + (ddev if last else 0)
        tkv = kv_layers(t, tp, layers, kv_bytes)
        skv = dkv if last else KvLayers()
        per_seq = tkv.per_sequence(length, batched, capped) + skv.per_sequence(length, batched, capped)
        logits = verify if last else 0
        budget = int(m.cpu_kvcache_space_gib * GIB) if explicit else int(util * memory) - weights - activation - logits - overhead
        concurrency = max(budget, 0) / per_seq if per_seq else 0.0
        stages.append((concurrency, stage, weights, tkv, skv, per_seq, logits, budget))
    concurrency, stage, per_device, tkv, skv, per_seq, verify, kv_budget = min(stages, key=lambda s: (not s[5], s[0], -s[1]))
    plan = MemoryPlan(
        hardware=hw.name, device=hw.device, devices=tp * pp, nnodes=par.nnodes, device_memory=memory,
        utilization=util, max_model_len=length, max_num_seqs=seqs, target_params=tparams,
        draft_params=dparams, target_weights=twb, draft_weights=dwb, weights_per_device=per_device,
        kv_per_token_target=tkv.per_token, kv_per_token_draft=skv.per_token, kv_per_sequence=per_seq,
        chunk_capped=capped and bool(tkv.chunk), activation=activation, verify=verify, overhead=overhead,
        kv_budget=kv_budget, kv_explicit=explicit, kv_tokens=int(concurrency * length), concurrency=concurrency,
        draft_per_device=ddev if stage == pp - 1 else 0, stage=stage, stages=pp,
    )
    _verdict(plan, cfg)
    return plan


def _draft_weights(method: str | None, target: dict[str, Any], draft: dict[str, Any] | None, eagle: bool,
                   whole: bool, model_bytes: int, tp: int, pp: int) -> tuple[count.Params | None, int, int]:
    """The draft's parameters, its weights' bytes and its bytes per device (an EAGLE head or a draft
    model; None, 0, 0 without either)."""
    dparams: count.Params | None = None
    dwb = ddev = 0
    if eagle:
        # vLLM 0.32 shards an EAGLE head over the target's TP (draft_tensor_parallel_size has no effect);
        # under pipeline parallelism it lives on the last stage and keeps its own token embedding.
        dquant = quantization(None, draft)
        dparams = count.eagle_draft(draft, method, target, keep=not_converted(draft, dquant), own_embedding=pp > 1)
        dwb = weight_bytes(dparams, dquant, model_bytes)
        ddev = weight_bytes(dparams, dquant, model_bytes, tp)
    elif whole:
        # vLLM 0.32 needs a draft model's TP to be the target's (draft_model.py): sharded the same way.
        dquant = quantization(None, draft)
        dparams = count.model(draft, keep=not_converted(draft, dquant))
        dwb = weight_bytes(dparams, dquant, model_bytes)
        ddev = weight_bytes(dparams, dquant, model_bytes, tp)
    return dparams, dwb, ddev


def _verify_bytes(cfg: Config, t: dict[str, Any], draft: dict[str, Any] | None, seqs: int) -> int:
    """The logits of a verify step (the target's, over the largest k a step verifies), and the
    draft's when it has logits of its own (``draft``: an EAGLE head's or a draft model's config)."""
    method = cfg.draft.method
    vocab = t["vocab_size"]
    k = max_k(cfg.draft.lookahead_schedule, cfg.lookahead) if method else 0  # the largest k a step verifies
    verify = seqs * (k + 1) * vocab * 4 * 2
    if draft is not None:
        verify += seqs * (_text(draft).get("draft_vocab_size") or _text(draft).get("vocab_size") or vocab) * 4
    return verify


def _verdict(plan: MemoryPlan, cfg: Config) -> None:
    hw = cfg.hardware
    gib = lambda b: f"{b / GIB:.1f} GiB"  # noqa: E731
    available = hw.devices_per_node * plan.nnodes
    if hw.device == "cuda" and plan.devices > available:
        plan.problems.append(
            f"needs {plan.devices} GPUs (TP x PP) but {plan.nnodes} node(s) of {hw.devices_per_node} have {available}"
        )
    if plan.kv_explicit:
        if plan.weights_per_device + plan.kv_budget > plan.device_memory:
            plan.problems.append(
                f"weights {gib(plan.weights_per_device)} + KV cache {gib(plan.kv_budget)} exceed the node's {gib(plan.device_memory)}"
            )
    elif plan.kv_budget <= 0:
        plan.problems.append(
            f"weights {gib(plan.weights_per_device)} + working memory {gib(plan.activation + plan.verify + plan.overhead)} "
            f"exceed {plan.utilization:g} x {gib(plan.device_memory)} per device: out of memory"
        )
    if plan.kv_budget > 0 and plan.concurrency < 1:
        plan.problems.append(
            f"one sequence at max_model_len={plan.max_model_len} needs {gib(plan.kv_per_sequence)} of KV cache, "
            f"{gib(plan.kv_budget)} is left: vLLM refuses to start"
        )


def suggest(cfg: Config, target: dict[str, Any], draft: dict[str, Any] | None, device_memory_gib: float) -> MemoryPlan:
    """The plan plus, when it does not fit, single changes that make it fit (least disruptive first)."""
    plan = memory_plan(cfg, target, draft, device_memory_gib)
    if plan.fits:
        return plan

    def attempt(label: str, change) -> bool:
        trial = copy.deepcopy(cfg)
        change(trial)
        after = memory_plan(trial, target, draft, device_memory_gib)
        if after.fits:
            plan.suggestions.append((label, after.kv_tokens))
        return after.fits

    seqs = plan.max_num_seqs // 2
    while seqs >= 1:
        if attempt(f"memory.max_num_seqs={seqs}", lambda c, s=seqs: setattr(c.memory, "max_num_seqs", s)):
            break
        seqs //= 2
    if not cfg.memory.kv_cache_dtype.startswith("fp8") and cfg.hardware.device == "cuda":
        attempt("memory.kv_cache_dtype=fp8", lambda c: setattr(c.memory, "kv_cache_dtype", "fp8"))
    lo, hi, best = 1, plan.max_model_len - 1, 0
    while lo <= hi:  # the longest max_model_len that fits
        mid = (lo + hi) // 2
        trial = copy.deepcopy(cfg)
        trial.memory.max_model_len = mid
        if memory_plan(trial, target, draft, device_memory_gib).fits:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    if best >= 256:
        best = best // 256 * 256
        attempt(f"memory.max_model_len={best}", lambda c: setattr(c.memory, "max_model_len", best))
    heads = _text(target)["num_attention_heads"]
    for tp in (2, 4, 8, 16, 32):
        if tp > cfg.parallel.tensor_parallel_size and heads % tp == 0:
            if attempt(f"parallel.tensor_parallel_size={tp}", lambda c, n=tp: _set_tp(c, n)):
                break
    if cfg.hardware.fp8 and not quantization(cfg.target.quantization, target):
        attempt("target.quantization=fp8", lambda c: setattr(c.target, "quantization", "fp8"))
    return plan


def _set_tp(cfg: Config, tp: int) -> None:
    cfg.parallel.tensor_parallel_size = tp
    if cfg.parallel.draft_tensor_parallel_size not in (None, 1):
        cfg.parallel.draft_tensor_parallel_size = tp
