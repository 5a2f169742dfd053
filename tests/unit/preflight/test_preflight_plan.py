"""Planner figures against the published parameter counts, and the Scout memory verdicts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.preflight import count
from llama4spec.preflight.memory import memory_plan as make_plan, suggest
from llama4spec.preflight.sources import KNOWN_DIR, bundled

SCOUT = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
MAVERICK = "meta-llama/Llama-4-Maverick-17B-128E-Instruct"
LLAMA31 = "meta-llama/Llama-3.1-8B-Instruct"
DRAFT = "morgendave/EAGLE-Llama-4-Scout-17B-16E-Instruct"
H100 = 79.19


def config(model_id: str) -> dict:
    return json.loads(bundled(model_id).read_text())


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf")))


def test_bundled_configs():
    assert {p.stem.replace("--", "/") for p in KNOWN_DIR.glob("*.json")} == {SCOUT, MAVERICK, LLAMA31, DRAFT}


@pytest.mark.parametrize("model_id, total, active", [
    (SCOUT, 109e9, 17e9),
    (MAVERICK, 400e9, 17e9),
    (LLAMA31, 8.03e9, 8.03e9),
])
def test_published_parameter_counts(model_id, total, active):
    p = count.model(config(model_id))
    assert abs(p.total - total) <= 0.01 * total, p.total
    # Meta publishes "17B active", a figure rounded to whole billions: ours must round to it.
    assert round(p.active / 1e9) == round(active / 1e9), p.active
    if model_id == LLAMA31:
        assert abs(p.active - active) <= 0.01 * active


def test_exact_counts():
    assert count.model(config(SCOUT)).total == 108_641_793_536  # the Scout checkpoint's safetensors total
    assert count.model(config(LLAMA31)).total == 8_030_261_248
    scout = count.model(config(SCOUT))
    assert scout.parts["experts (idle)"] == 48 * 15 * 3 * 5120 * 8192  # every expert counted


def test_scout_draft_count():
    p = count.eagle_draft(config(DRAFT))
    layer = 2 * 5120 * 5120 + 2 * 5120 * 1024 + 3 * 5120 * 16384 + 2 * 5120
    assert p.total == 2 * 5120 * 5120 + layer + 5120 + 202048 * 5120
    assert "embeddings" not in p.parts  # shared with the target


def scout(*overrides: str):
    cfg = compose_config(["experiment=scout_eagle_reference", "hardware=h100_80gb", *overrides]).cfg
    return cfg, config(SCOUT), config(DRAFT)


def test_scout_bf16_tp1_h100_out_of_memory():
    cfg, t, d = scout("parallel=tp1", "parallel.draft_tensor_parallel_size=null")
    plan = suggest(cfg, t, d, H100)
    assert not plan.fits
    assert plan.weights_per_device > 200 * 1024**3
    assert plan.suggestions and plan.suggestions[0][0] == "parallel.tensor_parallel_size=4"


def test_scout_bf16_tp4_h100_fits():
    cfg, t, d = scout()
    plan = make_plan(cfg, t, d, H100)
    assert plan.fits, plan.problems
    assert plan.devices == 4
    # 48 layers x 2 (K, V) x 8/4 KV heads x 128 x 2 bytes; the draft's one layer on top.
    assert plan.kv_per_token_target == 48 * 2 * 2 * 128 * 2
    assert plan.kv_per_token_draft == 1 * 2 * 2 * 128 * 2
    assert plan.concurrency > 1


def test_draft_counted():
    cfg, t, d = scout()
    with_draft = make_plan(cfg, t, d, H100)
    without = make_plan(compose_config(["experiment=scout_eagle_reference", "hardware=h100_80gb", "draft=none"]).cfg, t, None, H100)
    # vLLM 0.32 shards the head over the target's 4 GPUs, but for fc (2h x h) and the norms, whole on each.
    whole = (2 * 5120 * 5120 + 3 * 5120) * 2
    assert with_draft.weights_per_device - without.weights_per_device == -(-(with_draft.draft_weights - whole) // 4) + whole
    assert with_draft.verify > without.verify


def test_chunk_cap_only_without_eagle():
    cfg, t, d = scout("memory.max_model_len=131072")
    eagle = make_plan(cfg, t, d, H100)
    base_cfg = compose_config(["experiment=scout_eagle_reference", "hardware=h100_80gb", "draft=none",
                               "memory.max_model_len=131072"]).cfg
    base = make_plan(base_cfg, t, None, H100)
    assert not eagle.chunk_capped and base.chunk_capped
    # 36 of Scout's 48 layers are chunked (8192): without EAGLE they hold at most chunk + in-flight tokens.
    per_layer = 2 * 2 * 128 * 2
    assert base.kv_per_sequence == 12 * per_layer * 131072 + 36 * per_layer * (8192 + 80000)


def test_unset_max_model_len_suggests_a_shorter_one():
    cfg, t, d = scout("memory.max_model_len=null")
    plan = suggest(cfg, t, d, H100)
    assert plan.max_model_len == 10485760 and not plan.fits
    labels = [label for label, _ in plan.suggestions]
    assert any(label.startswith("memory.max_model_len=") for label in labels)


def test_fp8_kv_halves_kv_per_token():
    cfg, t, d = scout("memory.kv_cache_dtype=fp8")
    assert make_plan(cfg, t, d, H100).kv_per_token_target == 48 * 2 * 2 * 128


def test_multi_node_needs_enough_gpus():
    cfg, t, d = scout("parallel=tp8", "parallel.pipeline_parallel_size=2", "parallel.draft_tensor_parallel_size=8")
    one_node = make_plan(cfg, t, d, H100)
    assert any("16 GPUs" in problem for problem in one_node.problems)
    cfg.parallel.nnodes = 2
    two_nodes = make_plan(cfg, t, d, H100)
    assert two_nodes.fits and two_nodes.weights_per_device < one_node.weights_per_device * 1.01


def test_plan_cli_scout(cli, tiny_dir):
    offline = {"HF_HUB_OFFLINE": "1"}
    run = cli("plan", "experiment=scout_eagle_reference", "hardware=h100_80gb", "parallel=tp1",
              "parallel.draft_tensor_parallel_size=null", env=offline)
    assert run.returncode == 1, run.stderr
    assert "does not fit" in run.stdout and "parallel.tensor_parallel_size=4" in run.stdout
    assert cli("plan", "experiment=scout_eagle_reference", "hardware=h100_80gb", env=offline).returncode == 0


PROBE = """
import json, sys, time
start = time.perf_counter()
from llama4spec.cli.main import main
codes = [main([cmd, *sys.argv[1:]]) for cmd in ("doctor", "plan")]
elapsed = time.perf_counter() - start
heavy = sorted(m for m in ("vllm", "torch", "transformers") if m in sys.modules)
print("RESULT", json.dumps([codes, heavy, elapsed]))
"""


@pytest.mark.parametrize("overrides,codes", [
    ([], [0, 0]),
    (["experiment=scout_eagle_reference", "hardware=h100_80gb"], [1, 0]),  # the head's bundled config.json
])
def test_doctor_and_plan_import_neither_vllm_nor_torch(tiny_dir, overrides, codes):
    run = subprocess.run([sys.executable, "-c", PROBE, *overrides], capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
    line = [l for l in run.stdout.splitlines() if l.startswith("RESULT")]
    assert line, run.stdout + run.stderr
    found, heavy, _ = json.loads(line[0].removeprefix("RESULT"))
    assert found == codes and heavy == []


def tensor_bytes(path) -> int:
    """Sum of tensor data sizes from a safetensors header."""
    import struct

    with path.open("rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return sum(end - start for key, v in header.items() if key != "__metadata__" for start, end in [v["data_offsets"]])


def test_tiny_weights_match_safetensors(tiny_dir):
    from llama4spec.preflight import device_memory_gib, pairing

    cfg = compose_config([]).cfg
    p = pairing(cfg)
    plan = make_plan(cfg, p.target.config, p.draft.config, device_memory_gib(cfg))
    assert plan.target_weights == tensor_bytes(tiny_dir / "target" / "model.safetensors")
    assert plan.draft_weights == tensor_bytes(tiny_dir / "draft" / "model.safetensors")
    from llama4spec.tiny import weights as tiny

    # every attention layer (the target's and the draft's one) x K and V x KV heads x head dim x 4 bytes
    assert plan.kv_per_token_target == tiny.LAYERS * 2 * tiny.KV_HEADS * tiny.HEAD_DIM * 4
    assert plan.kv_per_token_draft == 1 * 2 * tiny.KV_HEADS * tiny.HEAD_DIM * 4
