"""Speculative sampling at temperature > 0 on vLLM's CPU build, with and without this project's
vLLM plugin (``llama4spec.engine.cpu_fix``), on the perfect tiny pair at T = 0.8. The target puts
p >= 0.99997 on the drafted word at every T <= 1, so nearly every draft token must be accepted
(expected accepted share >= 0.9999 per position; the counters are vLLM's own).

Without the plugin (``VLLM_PLUGINS=""``, vLLM's allow-list) the doctor refuses the run (exit 2,
nothing started), and forced,
vLLM's broken CPU fallback divides the target's logits by uninitialised memory: measured, 1 of 87
draft tokens accepted (24 of 24 with the plugin). Two engine starts.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.engine

HOT = ["generation.temperature=0.8", "dataset.num_prompts=2", "generation.max_tokens=16", "lookahead=3"]


def _acceptance(path) -> dict:
    return json.loads(path.read_text())["stats"]["acceptance"]


def test_with_the_plugin_hot_sampling_accepts_what_the_target_agrees_with(tmp_path, tiny_dir) -> None:
    done = run_cli("offline", *HOT, "--json", str(tmp_path / "run.json"), "-v", timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "CPU expand-kernel fix applied (vLLM 0.32.0)" in done.stdout + done.stderr
    acc = _acceptance(tmp_path / "run.json")
    assert acc["num_draft_tokens"] > 0
    assert acc["num_accepted_tokens"] >= 0.99 * acc["num_draft_tokens"], acc


def test_without_it_the_doctor_refuses_and_a_forced_run_shows_the_defect(tmp_path, tiny_dir) -> None:
    off = {"VLLM_PLUGINS": ""}
    refused = run_cli("offline", *HOT, env=off, timeout=300)
    assert refused.returncode == 2 and "with a draft on vLLM's CPU build" in refused.stderr, refused.stderr
    forced = run_cli("offline", *HOT, "--force", "--json", str(tmp_path / "run.json"), env=off, timeout=900)
    assert forced.returncode == 0, forced.stdout[-3000:] + forced.stderr[-3000:]
    acc = _acceptance(tmp_path / "run.json")
    assert acc["num_draft_tokens"] > 0
    assert acc["num_accepted_tokens"] < 0.5 * acc["num_draft_tokens"], acc  # the defect: measured 1 of 87
