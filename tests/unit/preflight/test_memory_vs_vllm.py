"""The memory plan places and sizes the draft as vLLM 0.32 does, against hand-computed figures.

- An EAGLE/EAGLE-3 head is built with the target's parallel config (llm_base_proposer.py
  ``_create_draft_vllm_config``; the V2 runner's ``load_eagle_model``): sharded over the target's TP
  whatever ``draft_tensor_parallel_size`` says, its fc and norms whole on every rank.
- The drafter lives on the last pipeline stage only (gpu_model_runner.py ``is_last_rank``), where the
  target's embedding is absent, so the head keeps its own; layers split as ``get_pp_indices`` does.
- An EAGLE-3 head's fc is a ReplicatedLinear from 3 x target hidden (llama_eagle3.py), its first
  qkv_proj reads 2 x hidden, and it adds a hidden_norm per layer.
- FP8 checkpoints keep ``modules_to_not_convert`` in the model dtype, matched as ``is_layer_skipped`` does.

Pure and fast: synthetic config dicts written here, and the bundled Scout configs.
"""

from __future__ import annotations

import copy
import json

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.preflight import count
from llama4spec.preflight.memory import memory_plan, pp_stages
from llama4spec.preflight.rule import WARNING, Pairing
from llama4spec.preflight.setting_rules import eagle_draft_tp
from llama4spec.preflight.sources import KNOWN_DIR, ModelConfig

H100 = 79.19
SCOUT = json.loads((KNOWN_DIR / "meta-llama--Llama-4-Scout-17B-16E-Instruct.json").read_text())
HEAD = json.loads((KNOWN_DIR / "morgendave--EAGLE-Llama-4-Scout-17B-16E-Instruct.json").read_text())

# A small Llama 4 text target: 5 layers, MoE every second layer (1 and 3), bf16.
TARGET = {
    "architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text", "torch_dtype": "bfloat16",
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "num_hidden_layers": 5, "intermediate_size": 32, "intermediate_size_mlp": 128,
    "num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2,
    "vocab_size": 1024, "max_position_embeddings": 4096, "tie_word_embeddings": False,
}
# Its parameters by hand (h 64, q 4 x 16 = 64, kv 2 x 16 = 32):
#   attention per layer: qkv 64 x (64 + 2 x 32) = 8192, o 64 x 64 = 4096  -> 12288, x 5 = 61440
#   dense MLP (layers 0, 2, 4): 3 x 64 x 128 = 24576, x 3 = 73728
#   MoE (layers 1, 3): 4 experts x 3 x 64 x 32 = 24576 + shared 6144 = 30720, x 2 = 61440; routers 2 x 64 x 4 = 512
#   norms 5 x 2 x 64 + 64 = 704; embeddings and lm_head 1024 x 64 = 65536 each
TARGET_LINEAR = 61440 + 73728 + 61440  # 196608
TARGET_OTHER = 704 + 512 + 2 * 65536  # 132288
TARGET_BYTES = 2 * (TARGET_LINEAR + TARGET_OTHER)  # 657792

# A Llama 4 EAGLE head for it (loaded as EagleLlama4ForCausalLM).
DRAFT = {
    "architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text", "torch_dtype": "bfloat16",
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "num_hidden_layers": 1, "intermediate_size": 32, "intermediate_size_mlp": 128, "num_local_experts": 4,
    "interleave_moe_layer_step": 0, "moe_layers": [], "no_rope_layers": [1], "vocab_size": 1024,
    "draft_vocab_size": 1024, "yoco_global_kv_layer": None, "yoco_local_kv_layer": None,
    "max_position_embeddings": 4096,
}
# Sharded over TP: attention 12288 + MLP 3 x 64 x 128 = 24576 + lm_head 1024 x 64 = 65536 -> 102400 parameters.
# Whole on every rank: fc (a plain torch Linear, 2 x 64 -> 64) 8192 + layer norms 128 + final norm 64 -> 8384.
DRAFT_SHARDED, DRAFT_WHOLE = 102400, 8384

# An EAGLE-3 head (loaded as Eagle3LlamaForCausalLM), draft vocabulary 256 of the target's 1024.
EAGLE3 = {
    "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "torch_dtype": "bfloat16",
    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "num_hidden_layers": 1, "intermediate_size": 128, "vocab_size": 1024, "draft_vocab_size": 256,
    "max_position_embeddings": 4096,
}
# Sharded: qkv reads [embedding | hidden] = 128 wide: 128 x 128 = 16384, o 4096, MLP 3 x 64 x 128 = 24576,
#   lm_head 256 x 64 = 16384 -> 61440.
# Whole: fc 3 x 64 -> 64 = 12288 (ReplicatedLinear), norms 3 x 64 (input, post-attention, hidden) + 64 -> 12544;
#   plus the int64 draft-to-target map: 256 x 8 = 2048 bytes.
EAGLE3_SHARDED, EAGLE3_WHOLE, EAGLE3_MAP = 61440, 12544, 2048


def cfg(*overrides: str):
    return compose_config(["experiment=scout_eagle_reference", "hardware=h100_80gb", *overrides]).cfg


# ---- 1. draft_tensor_parallel_size=1 is draft TP = target TP for EAGLE ----

@pytest.mark.parametrize("dtp", ["1", "4", "null"])
def test_eagle_head_sharded_over_target_tp_whatever_draft_tp(dtp):
    plan = memory_plan(cfg("parallel=tp4", f"parallel.draft_tensor_parallel_size={dtp}"), TARGET, DRAFT, H100)
    assert plan.draft_per_device == 2 * DRAFT_SHARDED // 4 + 2 * DRAFT_WHOLE == 67968
    assert plan.weights_per_device == TARGET_BYTES // 4 + 67968 == 232416
    # one draft layer, 2 KV heads over 4 ranks: one replica each, K and V x 16 x 2 bytes
    assert plan.kv_per_token_draft == 2 * 1 * 16 * 2 == 64
    assert plan.kv_per_token_target == 5 * 64
    assert plan.draft_weights == 2 * (DRAFT_SHARDED + DRAFT_WHOLE)


def test_scout_draft_tp1_plans_as_draft_tp4():
    one = memory_plan(cfg("parallel.draft_tensor_parallel_size=1"), SCOUT, HEAD, H100)
    four = memory_plan(cfg("parallel.draft_tensor_parallel_size=4"), SCOUT, HEAD, H100)
    assert (one.weights_per_device, one.kv_per_token_draft, one.kv_tokens) == \
        (four.weights_per_device, four.kv_per_token_draft, four.kv_tokens)
    # Head: attention 5120 x (5120 + 2 x 1024) + 5120 x 5120, MLP 3 x 5120 x 16384, lm_head 202048 x 5120
    # sharded over 4; fc 2 x 5120 x 5120 and norms 3 x 5120 whole; bf16.
    sharded = 5120 * 7168 + 5120 * 5120 + 3 * 5120 * 16384 + 202048 * 5120
    whole = 2 * 5120 * 5120 + 3 * 5120
    assert sharded == 1_349_058_560 and whole == 52_444_160
    assert one.draft_per_device == 2 * sharded // 4 + 2 * whole == 779_417_600
    assert one.kv_per_token_draft == 2 * 2 * 128 * 2  # 8 KV heads / 4 ranks, not 8 on one GPU


def test_doctor_warns_that_draft_tp1_has_no_effect():
    def finding(*overrides: str):
        c = cfg(*overrides)
        return eagle_draft_tp(Pairing(c, ModelConfig("t", SCOUT, "bundled", None, "target.model"),
                                      ModelConfig("d", HEAD, "bundled", None, "draft.model")))

    found = finding("parallel.draft_tensor_parallel_size=1")
    assert [f.severity for f in found] == [WARNING]
    assert "llm_base_proposer.py" in found[0].why and "no effect" in found[0].why
    assert finding("parallel.draft_tensor_parallel_size=4") == []
    assert finding("parallel.draft_tensor_parallel_size=null") == []
    assert finding("parallel=tp1", "parallel.draft_tensor_parallel_size=1") == []


# ---- 2. pipeline parallelism: the draft on the last stage only ----

def test_pp_stages_split_as_vllm():
    assert pp_stages(5, 2) == [range(0, 3), range(3, 5)]  # the remainder goes before the last stage
    assert pp_stages(48, 2) == [range(0, 24), range(24, 48)]
    assert [len(r) for r in pp_stages(10, 4)] == [2, 3, 3, 2]


def test_pp2_draft_only_on_the_last_stage():
    plan = memory_plan(cfg("parallel=tp2", "parallel.pipeline_parallel_size=2"), TARGET, DRAFT, H100)
    assert (plan.stage, plan.stages) == (1, 2)
    # Last stage: target layers 3 and 4, 1 KV head per rank (2 / TP 2): 2 x 16 x 2 bytes = 64 per layer.
    assert plan.kv_per_token_target == 2 * 64 and plan.kv_per_token_draft == 64
    # The head keeps its own embedding there (1024 x 64, sharded): 102400 + 65536 sharded over TP 2.
    assert plan.draft_per_device == 2 * (DRAFT_SHARDED + 65536) // 2 + 2 * DRAFT_WHOLE == 184704
    assert plan.weights_per_device == -(-TARGET_BYTES // 4) + 184704 == 349152
    assert plan.verify > 0  # the logits are computed on the last stage


def test_pp2_without_draft_reports_the_fuller_first_stage():
    plan = memory_plan(cfg("parallel=tp2", "parallel.pipeline_parallel_size=2", "draft=none"), TARGET, None, H100)
    # Stage 1 of 2 holds 3 of the 5 layers and no logits: per token 3 x 64 against the last stage's 2 x 64.
    assert (plan.stage, plan.kv_per_token_target, plan.kv_per_token_draft, plan.verify) == (0, 3 * 64, 0, 0)
    assert plan.weights_per_device == -(-TARGET_BYTES // 4)


def test_scout_tp4_pp2():
    plan = memory_plan(cfg("parallel=tp4_pp2"), SCOUT, HEAD, H100)
    assert (plan.stage, plan.stages, plan.devices) == (1, 2, 8)
    assert plan.kv_per_token_target == 24 * 2 * 2 * 128 * 2 == 24_576  # 24 of 48 layers
    assert plan.kv_per_token_draft == 1_024
    own_embedding = 202048 * 5120
    draft = 2 * (1_349_058_560 + own_embedding) // 4 + 2 * 52_444_160
    assert plan.draft_per_device == draft == 1_296_660_480
    assert plan.weights_per_device == 2 * 108_641_793_536 // 8 + draft == 28_457_108_864


# ---- 3. EAGLE-3: fc 3 x hidden -> hidden, replicated ----

def test_eagle3_count():
    p = count.eagle_draft(EAGLE3, "eagle3", TARGET)
    assert p.parts["fc"] == 3 * 64 * 64 and p.parts["attention"] == 128 * 128 + 64 * 64
    assert p.total == EAGLE3_SHARDED + EAGLE3_WHOLE == 73984
    assert p.whole_linear == 3 * 64 * 64  # fc: ReplicatedLinear, under the head's quantization
    assert p.whole_other == 4 * 64 and p.buffer_bytes == EAGLE3_MAP


def test_eagle3_plan_keeps_fc_whole():
    plan = memory_plan(cfg("parallel=tp4", "draft.method=eagle3"), TARGET, EAGLE3, H100)
    assert plan.draft_weights == 2 * (EAGLE3_SHARDED + EAGLE3_WHOLE) + EAGLE3_MAP == 150016
    assert plan.draft_per_device == 2 * EAGLE3_SHARDED // 4 + 2 * EAGLE3_WHOLE + EAGLE3_MAP == 57856


@pytest.mark.parametrize("extra, width", [
    ({}, 3 * 64),
    ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3, 4]}}, 4 * 64),
    ({"num_aux_hidden_states": 2, "target_hidden_size": 96}, 2 * 96),
    ({"eagle_config": {"use_aux_hidden_state": False}}, 0),
])
def test_eagle3_fc_width(extra, width):
    p = count.eagle_draft({**EAGLE3, **extra}, "eagle3", TARGET)
    assert p.parts.get("fc", 0) == width * 64


def test_eagle3_on_scout_dimensions():
    head = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 5120,
            "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 1,
            "intermediate_size": 16384, "vocab_size": 202048, "draft_vocab_size": 202048}
    p = count.eagle_draft(head, "eagle3", SCOUT)
    assert p.parts["fc"] == 3 * 5120 * 5120 == 78_643_200  # the EAGLE (Llama 4) head's is 2 x 5120 x 5120
    assert p.parts["attention"] == 2 * 5120 * 7168 + 5120 * 5120
    assert p.buffer_bytes == 0  # same vocabulary: no draft-to-target map
    plan = memory_plan(cfg("draft.method=eagle3"), SCOUT, head, H100)
    sharded = 2 * 5120 * 7168 + 5120 * 5120 + 3 * 5120 * 16384 + 202048 * 5120
    whole = 3 * 5120 * 5120 + 4 * 5120
    assert plan.draft_per_device == 2 * sharded // 4 + 2 * whole


# ---- 4. FP8: modules_to_not_convert stay in bf16 ----

def fp8(config: dict, names: list[str]) -> dict:
    out = copy.deepcopy(config)
    out["quantization_config"] = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
                                  "modules_to_not_convert": names}
    return out


def test_fp8_modules_to_not_convert_synthetic():
    root = "language_model.model.layers"
    wrapped = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4", "text_config": TARGET}
    names = [f"{root}.0.self_attn.{m}" for m in ("q_proj", "k_proj", "v_proj", "o_proj")]  # 12288
    names += [f"{root}.1.feed_forward.shared_expert.{m}" for m in ("gate_proj", "up_proj", "down_proj")]  # 6144
    names += [f"{root}.3.feed_forward.experts.gate_up_proj"]  # vLLM: any listed name containing the experts' -> 24576
    names += [f"{root}.2.self_attn"]  # a parent module: vLLM's exact match skips nothing
    kept = 12288 + 6144 + 24576
    p = count.model(wrapped, keep=names)
    assert p.unconverted == kept == 43008
    assert (p.linear, p.other) == (TARGET_LINEAR - kept, TARGET_OTHER + kept)
    plan = memory_plan(cfg(), fp8(wrapped, names), None, H100)
    assert plan.target_weights == (TARGET_LINEAR - kept) * 1 + (TARGET_OTHER + kept) * 2 == 504192
    # without the list every linear weight is FP8
    assert memory_plan(cfg(), fp8(wrapped, []), None, H100).target_weights == TARGET_LINEAR + 2 * TARGET_OTHER == 461184


def test_fp8_modules_to_not_convert_scout():
    root = "language_model.model.layers"
    names = [f"{root}.{i}.self_attn.{m}" for i in range(48) for m in ("q_proj", "k_proj", "v_proj", "o_proj")]
    names += [f"{root}.{i}.feed_forward.shared_expert.{m}" for i in range(48) for m in ("gate_proj", "up_proj", "down_proj")]
    attention = 5120 * 7168 + 5120 * 5120  # 62,914,560 per layer
    shared = 3 * 5120 * 8192  # 125,829,120 per layer
    kept = 48 * (attention + shared)
    assert kept == 9_059_696_640
    linear = 48 * 16 * shared + kept  # every Scout layer is MoE: 16 routed experts + shared expert + attention
    other = 108_641_793_536 - linear
    plan = memory_plan(cfg("draft=none"), fp8(SCOUT, names), None, H100)
    assert plan.target_params.unconverted == kept
    assert plan.target_weights == (linear - kept) + 2 * (other + kept) == 120_646_822_912
    # online FP8 of the bf16 checkpoint (no quantization_config): nothing is kept
    online = memory_plan(cfg("draft=none", "target.quantization=fp8"), SCOUT, None, H100)
    assert online.target_params.unconverted == 0 and online.target_weights == linear + 2 * other
