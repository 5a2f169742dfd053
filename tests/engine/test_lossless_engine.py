"""The losslessness check (``llama4spec lossless``) on the spread tiny pair, with and without this
project's CPU fix (``llama4spec.engine.cpu_fix``), and independent samples at temperature > 0.
Three engine starts, under three minutes here.

- With the fix: temperature 0 (speculation and the target in another batch shape both give the
  target's own tokens: no divergence) and 0.8 (the emitted tokens follow the exact distribution:
  no rejection at the joint level). Sixteen requests over four prompts: those of one prompt differ.
- Without the fix (``VLLM_PLUGINS=""``): the doctor refuses the check; forced, it declares
  speculation lossy at 0.8 (vLLM's CPU fallback verifies against uninitialised temperatures), and
  ``--fail-on-lossless`` makes that exit 1.

Every request of a batch has a seed of its own (``offline.run.request_seed``, the same function an
``offline`` batch uses): requests of one prompt at 0.8 sample differently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.engine

HOT = 0.8
CHECK = ["target=tiny_spread", "dataset.num_prompts=4", "generation.max_tokens=32", "--samples", "16"]


def _lossless(where: Path, temperatures: str, *extra: str, env: dict | None = None,
              exit_code: int = 0) -> tuple[dict, str]:
    done = run_cli("lossless", *CHECK, "--temperatures", temperatures, "--runs-dir", str(where), *extra,
                   env=env, timeout=900)
    output = done.stdout + done.stderr
    records = sorted(where.glob("lossless/*/lossless/lossless.json"))
    assert done.returncode == exit_code and records, output[-4000:]
    return json.loads(records[-1].read_text()), output


@pytest.fixture(scope="module")
def with_fix(tmp_path_factory) -> tuple[dict, str]:
    return _lossless(tmp_path_factory.mktemp("fix"), f"0,{HOT:g}")


def test_with_the_fix_speculation_is_lossless_at_0_and_above(with_fix) -> None:
    record, output = with_fix
    assert record["verdict"] == "pass", output[-4000:]
    greedy = record["greedy"]
    assert greedy["requests"] == 4 and greedy["diverged"] == [] and greedy["baseline_diverged"] == []
    (hot,) = record["sampled"]
    assert hot["temperature"] == HOT and hot["test"] == "exact multinomial" and hot["verdict"] == "pass"
    assert sum(hot["counts"]) == 16 * 31 and hot["p_value"] >= hot["level"] == record["settings"]["level"] / 2
    assert hot["counts"][1] > 50  # the second word is sampled: the temperature reached the sampler
    assert "verdict: no test rejected losslessness" in output


def test_requests_of_one_prompt_sample_independently(with_fix) -> None:
    outputs = with_fix[0]["sampled"][0]["outputs"]
    seeds = [o["seed"] for o in outputs]
    assert len(set(seeds)) == len(seeds) == 16
    first = [o["token_ids"] for o in outputs if o["prompt"] == 0]
    assert len(first) == 4 and len({tuple(ids) for ids in first}) == 4  # one prompt, four different samples


def test_without_the_fix_the_doctor_refuses_and_a_forced_check_finds_the_defect(tmp_path) -> None:
    off = {"VLLM_PLUGINS": ""}
    refused = run_cli("lossless", *CHECK, "--temperatures", f"{HOT:g}", "--runs-dir", str(tmp_path), env=off,
                      timeout=300)
    assert refused.returncode == 2 and "with a draft on vLLM's CPU build" in refused.stderr, refused.stderr[-2000:]
    record, output = _lossless(tmp_path, f"{HOT:g}", "--force", "--fail-on-lossless", env=off, exit_code=1)
    (hot,) = record["sampled"]
    assert record["verdict"] == "lossy" and hot["p_value"] < hot["level"], output[-4000:]
    assert "verdict: lossy" in output
