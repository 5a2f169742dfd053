"""The planner against the real engine (vLLM CPU build): the memory plan of the tiny pair against
what vLLM logs when it starts the same pair. The engine is the shared perfect-pair offline run
(tests/engine/conftest.py: ``perfect_offline``, run at -v so vLLM's log is kept), whose EAGLE
engine starts first with the KV cache space planned here."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.preflight import device_memory_gib, pairing
from llama4spec.preflight.memory import memory_plan as make_plan
from tests.engine.conftest import K, KV_GIB

pytestmark = pytest.mark.engine

OVERRIDES = [f"memory.cpu_kvcache_space_gib={KV_GIB}", "draft=tiny_eagle", f"lookahead={K}"]


def tensor_bytes(path: Path) -> int:
    """Sum of tensor data sizes from a safetensors header."""
    with path.open("rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return sum(end - start for key, v in header.items() if key != "__metadata__" for start, end in [v["data_offsets"]])


def test_tiny_plan_matches_vllm_startup(perfect_offline):
    cfg = compose_config(OVERRIDES).cfg
    p = pairing(cfg)
    plan = make_plan(cfg, p.target.config, p.draft.config, device_memory_gib(cfg))

    # Weights: planned bytes equal the checkpoints' tensor bytes (and the files within their headers).
    target_st, draft_st = Path(cfg.target.model, "model.safetensors"), Path(cfg.draft.model, "model.safetensors")
    assert plan.target_weights == tensor_bytes(target_st)
    assert plan.draft_weights == tensor_bytes(draft_st)
    assert 0 < target_st.stat().st_size - plan.target_weights < 16384

    # KV capacity: what vLLM logged at start-up of the EAGLE engine (the first of the run's two).
    log = perfect_offline.stdout + "\n" + perfect_offline.stderr
    found = re.findall(r"KV cache size: ([\d,]+) tokens", log)
    assert len(found) == 2, log[-4000:]  # the EAGLE engine, then the one without a draft
    reported = int(found[0].replace(",", ""))
    print(f"planned {plan.kv_tokens} tokens, vLLM reported {reported}")
    assert abs(plan.kv_tokens - reported) <= 0.10 * reported
