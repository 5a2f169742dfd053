"""The doctor's value rules agree with what the pinned vLLM accepts, asked of vLLM itself.

The doctor refused (exit 1) a dense EAGLE head with ``num_local_experts: 0`` and ``moe_layers: []``,
which vLLM 0.32 loads and runs; it passed a target config.json without ``hidden_size``, which vLLM
cannot load. Each case here is a rule's boundary: a copy of the tiny pair with one config.json value
changed. vLLM's verdict, without starting an engine or reading weights into memory:

1. ``EngineArgs(model=DIR, speculative_config=...).create_engine_config()`` must succeed (vLLM's
   own checks and transformers' strict config classes, as the engine runs them);
2. the sizes vLLM derived from the config (``hf_text_config``: hidden size, vocabulary, layers,
   query and KV heads) must match the checkpoint's tensor shapes (the safetensors header), or
   loading the weights fails;
3. for a Llama 4 EAGLE head, the assertions ``EagleLlama4ForCausalLM`` makes while it is built
   (read from vLLM's source, and checked to be still there) must hold on the config vLLM built.

The doctor's verdict (any ERROR finding) must be the same. Importing vLLM takes seconds: once,
in this module, skipped with the reason when vLLM is not importable.
"""

from __future__ import annotations

import copy
import inspect
import json
import struct
from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not importable here: the doctor cannot be checked against it")

from llama4spec.config.compose import compose_config  # noqa: E402
from llama4spec.preflight import ERROR, examine, pairing  # noqa: E402
from llama4spec.tiny.build import ensure_built  # noqa: E402

OTHER_FILES = ("model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json")
MAX_MODEL_LEN = 256


@pytest.fixture(scope="module")
def tiny() -> Path:
    return ensure_built()


def _copy(root: Path, kind: str, where: Path, change: dict) -> Path:
    """The tiny ``kind`` in ``where``: its files linked, config.json with ``change`` (None: key removed)."""
    where.mkdir(parents=True)
    for name in OTHER_FILES:
        (where / name).symlink_to(root / kind / name)
    config = json.loads((root / kind / "config.json").read_text())
    for key, value in change.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = copy.deepcopy(value)
    (where / "config.json").write_text(json.dumps(config))
    return where


def _shapes(path: Path) -> dict[str, list[int]]:
    with open(path / "model.safetensors", "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    return {k: v["shape"] for k, v in header.items() if k != "__metadata__"}


def _weight_problem(hf, path: Path) -> str | None:
    """Where the sizes vLLM derived from config.json differ from the checkpoint's tensors."""
    shapes = _shapes(path)
    head = next(v for k, v in shapes.items() if k.endswith("lm_head.weight"))
    q = next(v for k, v in shapes.items() if k.endswith("layers.0.self_attn.q_proj.weight"))
    kv = next(v for k, v in shapes.items() if k.endswith("layers.0.self_attn.k_proj.weight"))
    layers = {k.split("layers.")[1].split(".")[0] for k in shapes if "layers." in k}
    head_dim = getattr(hf, "head_dim", None) or hf.hidden_size // hf.num_attention_heads
    derived = {"vocab_size": hf.vocab_size, "hidden_size": hf.hidden_size, "num_hidden_layers": hf.num_hidden_layers,
               "q rows": hf.num_attention_heads * head_dim, "kv rows": hf.num_key_value_heads * head_dim}
    actual = {"vocab_size": head[0], "hidden_size": head[1], "num_hidden_layers": len(layers), "q rows": q[0],
              "kv rows": kv[0]}
    wrong = [k for k in derived if derived[k] != actual[k]]
    return f"weights do not fit {wrong}" if wrong else None


# EagleLlama4ForCausalLM's assertions while it is built (vllm/model_executor/models/llama4_eagle.py).
EAGLE_ASSERTS = ("assert self.config.yoco_global_kv_layer is None", "assert self.config.yoco_local_kv_layer is None",
                 "assert len(self.config.moe_layers) == 0")


def _eagle_head_problem(hf) -> str | None:
    from vllm.model_executor.models import llama4_eagle

    source = inspect.getsource(llama4_eagle)
    assert all(line in source for line in EAGLE_ASSERTS), "vLLM's EAGLE head asserts other things now: update"
    try:
        assert hf.yoco_global_kv_layer is None
        assert hf.yoco_local_kv_layer is None
        assert len(hf.moe_layers) == 0
        hf.draft_vocab_size  # noqa: B018 - read while the lm_head is built
        assert len(hf.no_rope_layers) == hf.num_hidden_layers  # indexed per draft layer
    except (AssertionError, AttributeError, TypeError) as err:
        return f"EAGLE head build: {type(err).__name__} {err}"
    return None


def vllm_verdict(target: Path, draft: Path | None) -> str | None:
    """Why vLLM 0.32 cannot load this pair (None when it can)."""
    from vllm.engine.arg_utils import EngineArgs

    spec = {"method": "eagle", "model": str(draft), "num_speculative_tokens": 3} if draft else None
    try:
        config = EngineArgs(model=str(target), dtype="float32", max_model_len=MAX_MODEL_LEN, enforce_eager=True,
                            speculative_config=spec).create_engine_config()
    except Exception as err:  # noqa: BLE001 - whatever vLLM raises is its refusal
        return f"create_engine_config: {type(err).__name__}: {str(err)[:200]}"
    problem = _weight_problem(config.model_config.hf_text_config, target)
    if problem or draft is None:
        return problem
    hf = config.speculative_config.draft_model_config.hf_text_config
    return _weight_problem(hf, draft) or _eagle_head_problem(hf)


def doctor_verdict(target: Path, draft: Path | None) -> list[str]:
    drafting = ["draft=tiny_eagle", f"draft.model={draft}"] if draft else ["draft=none"]
    cfg = compose_config(["target=tiny", "memory=cpu", f"target.model={target}", *drafting,
                          f"memory.max_model_len={MAX_MODEL_LEN}"]).cfg
    return [f.line() for f in examine(pairing(cfg, network=False)) if f.severity == ERROR]


DENSE_HEAD = {"num_local_experts": 0, "moe_layers": [], "interleave_moe_layer_step": None}
# (rule, which config.json, the change): each rule's boundary cases
CASES = [
    ("unchanged", "draft", {}),
    ("draft-moe", "draft", DENSE_HEAD),
    ("draft-moe", "draft", {"moe_layers": [], "interleave_moe_layer_step": None}),
    ("draft-moe", "draft", {"moe_layers": [], "interleave_moe_layer_step": 1}),
    ("draft-moe", "draft", {"moe_layers": [0]}),
    ("draft-moe", "draft", {"moe_layers": None, "interleave_moe_layer_step": 1}),
    ("draft-moe", "draft", {"moe_layers": None, "interleave_moe_layer_step": 0}),
    ("config-values", "draft", {"num_local_experts": -1}),  # a dense head never reads it
    ("config-values", "draft", {"num_local_experts": 0, "moe_layers": [1]}),
    ("config-values", "draft", {"num_experts_per_tok": 5}),  # more than its 2 experts, on no MoE layer
    ("yoco-keys", "draft", {"yoco_global_kv_layer": None}),
    ("yoco-keys", "draft", {"yoco_local_kv_layer": 0}),
    ("draft-vocab", "draft", {"draft_vocab_size": None}),
    ("no-rope-layers", "draft", {"no_rope_layers": [1, 1]}),
    ("compatible", "draft", {"hidden_size": 128}),
    ("config-values", "target", {"hidden_size": None}),
    ("config-values", "target", {"num_attention_heads": None}),
    ("config-values", "target", {"num_key_value_heads": None}),
    ("config-values", "target", {"num_hidden_layers": None}),
    ("config-values", "target", {"vocab_size": None}),
    ("config-values", "target", {"hidden_size": 0}),
    ("config-values", "target", {"hidden_size": "256"}),
    ("config-values", "target", {"num_key_value_heads": 0}),
    ("config-values", "target", {"head_dim": None}),  # Llama 4's class default: 128, not 256 / 4
    ("max-model-len", "target", {"max_position_embeddings": MAX_MODEL_LEN - 1}),
    ("max-model-len", "target", {"max_position_embeddings": MAX_MODEL_LEN}),
    ("transformers-config", "target", {"attn_temperature_tuning": 4}),
]


@pytest.mark.parametrize("rule, which, change", CASES, ids=[f"{r}-{w}-{c}" for r, w, c in CASES])
@pytest.mark.parametrize("drafting", [True, False], ids=["eagle", "no-draft"])
def test_doctor_agrees_with_vllm(tiny: Path, tmp_path: Path, rule: str, which: str, change: dict,
                                 drafting: bool) -> None:
    if which == "draft" and not drafting:
        pytest.skip("a draft's config.json is read only with a draft")
    target = _copy(tiny, "target", tmp_path / "target", change if which == "target" else {})
    draft = _copy(tiny, "draft", tmp_path / "draft", change if which == "draft" else {}) if drafting else None
    vllm_says = vllm_verdict(target, draft)
    doctor_says = doctor_verdict(target, draft)
    assert bool(doctor_says) == bool(vllm_says), f"{rule} {which} {change}: vLLM: {vllm_says}; doctor: {doctor_says}"
