"""The planner against the real engine (vLLM CPU build): one engine start for the tiny pair."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.engine.args import llm_kwargs
from llama4spec.preflight import device_memory_gib, pairing
from llama4spec.preflight.memory import memory_plan as make_plan

KV_GIB = 1
OVERRIDES = [f"memory.cpu_kvcache_space_gib={KV_GIB}"]
SCRIPT = textwrap.dedent(
    """
    import json, sys
    from vllm import LLM

    if __name__ == "__main__":
        llm = LLM(**json.loads(sys.argv[1]))
        print("ENGINE-READY", flush=True)
    """
)


def tensor_bytes(path: Path) -> int:
    """Sum of tensor data sizes from a safetensors header."""
    with path.open("rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return sum(end - start for key, v in header.items() if key != "__metadata__" for start, end in [v["data_offsets"]])


@pytest.mark.engine
def test_tiny_plan_matches_vllm_startup(tiny_dir, tmp_path):
    cfg = compose_config(OVERRIDES).cfg
    p = pairing(cfg)
    plan = make_plan(cfg, p.target.config, p.draft.config, device_memory_gib(cfg))

    # Weights: planned bytes equal the checkpoints' tensor bytes (and the files within their headers).
    target_st, draft_st = Path(cfg.target.model, "model.safetensors"), Path(cfg.draft.model, "model.safetensors")
    assert plan.target_weights == tensor_bytes(target_st)
    assert plan.draft_weights == tensor_bytes(draft_st)
    assert 0 < target_st.stat().st_size - plan.target_weights < 16384

    # KV capacity: what vLLM logs at start-up for the same settings.
    script = tmp_path / "start.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": str(KV_GIB)}
    run = subprocess.run(
        [sys.executable, str(script), json.dumps(llm_kwargs(cfg))],
        capture_output=True, text=True, env=env, timeout=600,
    )
    log = run.stdout + run.stderr
    assert run.returncode == 0 and "ENGINE-READY" in run.stdout, log[-4000:]
    found = re.search(r"KV cache size: ([\d,]+) tokens", log)
    assert found, log[-4000:]
    reported = int(found.group(1).replace(",", ""))
    print(f"planned {plan.kv_tokens} tokens, vLLM reported {reported}")
    assert abs(plan.kv_tokens - reported) <= 0.10 * reported
