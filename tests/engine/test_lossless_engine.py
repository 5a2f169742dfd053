"""The losslessness check (``llama4spec lossless``) on a real vLLM, where users are: a copy of the
spread tiny target under another directory (the check does not recognise it, so its
context-conditioned test decides, not the tiny targets' exact one), 16 distinct prompts, one sample
each; with and without this project's CPU fix (``llama4spec.engine.cpu_fix``); and against a running
server. Five engine starts here (two checks of two engines each, one scoring engine beside the
shared server).

- With the fix: temperature 0 (speculation and the target in another batch shape both give the
  target's own tokens) and 0.8 with top_p 0.9 (the emitted tokens follow the target's processed
  distribution at each context as closely as the no-draft control does: pass); the exact test run
  on the same outputs agrees.
- Without the fix (``VLLM_PLUGINS=""``): the doctor refuses the check; forced, the
  context-conditioned test declares speculation lossy at 0.8 (vLLM's CPU fallback verifies against
  uninitialised temperatures), the exact test on the same outputs agrees, and
  ``--fail-on-lossless`` makes that exit 1.
- Served: ``lossless --url`` against the shared server (EAGLE k=3 on the tiny pair, with the fix),
  seeded completions scored by the target in an engine here: pass.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llama4spec.lossless import check
from llama4spec.lossless.settings import Settings
from tests.engine.conftest import K
from tests.helpers import run_cli

pytestmark = pytest.mark.engine

HOT = 0.8
PROMPTS = 16


@pytest.fixture(scope="module")
def copied_spread(tmp_path_factory, tiny_dir) -> Path:
    """The spread tiny target under a directory of its own: to the check, a model it does not know."""
    where = tmp_path_factory.mktemp("models") / "some-llama4-target"
    shutil.copytree(tiny_dir / "target_spread", where)
    return where


def _check(copied: Path) -> list[str]:
    return ["target=tiny_spread", f"target.model={copied}", "draft=tiny_eagle_spread", f"dataset.num_prompts={PROMPTS}",
            "generation.max_tokens=32", "generation.ignore_eos=true", "--samples", str(PROMPTS)]


def _lossless(where: Path, args: list[str], temperatures: str, *extra: str, env: dict | None = None,
              exit_code: int = 0) -> tuple[dict, str]:
    done = run_cli("lossless", *args, "--temperatures", temperatures, "--runs-dir", str(where), *extra,
                   env=env, timeout=900)
    output = done.stdout + done.stderr
    records = sorted(where.glob("lossless/*/lossless/lossless.json"))
    assert done.returncode == exit_code and records, output[-4000:]
    return json.loads(records[-1].read_text()), output


def _exact_on_the_same_outputs(test: dict, top_p: float = 1.0) -> check.SampledTest:
    """The tiny spread target's exact test, run on the outputs the context-conditioned test judged."""
    outputs = [o["token_ids"] for o in test["outputs"]]
    return check.exact_test("target_spread", Settings(top_p=top_p), test["temperature"], outputs, test["level"], seed=0)


@pytest.fixture(scope="module")
def with_fix(tmp_path_factory, copied_spread) -> tuple[dict, str]:
    return _lossless(tmp_path_factory.mktemp("fix"), _check(copied_spread), f"0,{HOT:g}", "--top-p", "0.9")


def test_with_the_fix_speculation_is_lossless_on_a_model_the_check_does_not_know(with_fix) -> None:
    record, output = with_fix
    assert record["verdict"] == "pass", output[-4000:]
    greedy = record["greedy"]
    assert greedy["requests"] == PROMPTS and greedy["diverged"] == [] and greedy["baseline_diverged"] == []
    (hot,) = record["sampled"]  # the copy: no exact cross-check, the context-conditioned test alone
    assert hot["test"] == check.CONTEXT and hot["verdict"] == "pass" and hot["p_value"] >= hot["level"]
    assert hot["sampling"] == {"temperature": HOT, "top_p": 0.9, "top_k": -1}
    assert hot["control"]["tokens"] == [PROMPTS * 31, PROMPTS * 31] and sum(hot["counts"]) == PROMPTS * 31
    assert hot["counts"][1] > 50  # the target's second word is sampled: the temperature reached the sampler
    assert 0 < hot["detectable"] <= 1 and hot["control"]["tail_bound"] == 0  # the full vocabulary was scored
    assert _exact_on_the_same_outputs(hot, top_p=0.9).verdict == "pass"  # the exact test agrees
    assert "T=0.8, top_p=0.9, context-conditioned: pass" in output and "found with 80% power" in output


def test_one_sample_per_prompt_over_distinct_prompts(with_fix) -> None:
    outputs = with_fix[0]["sampled"][0]["outputs"]
    assert sorted(o["prompt"] for o in outputs) == list(range(PROMPTS))  # every prompt once
    assert len({o["seed"] for o in outputs}) == PROMPTS
    assert len({o["token_ids"][0] for o in outputs}) > PROMPTS // 2  # distinct contexts from the first token on


def test_without_the_fix_the_doctor_refuses_and_a_forced_check_finds_the_defect(tmp_path, copied_spread) -> None:
    off = {"VLLM_PLUGINS": ""}
    args = _check(copied_spread)
    refused = run_cli("lossless", *args, "--temperatures", f"{HOT:g}", "--runs-dir", str(tmp_path), env=off,
                      timeout=300)
    assert refused.returncode == 2 and "with a draft on vLLM's CPU build" in refused.stderr, refused.stderr[-2000:]
    record, output = _lossless(tmp_path, args, f"{HOT:g}", "--force", "--fail-on-lossless", env=off, exit_code=1)
    (hot,) = record["sampled"]
    assert hot["test"] == check.CONTEXT and record["verdict"] == "lossy" and hot["p_value"] < hot["level"], output[-4000:]
    assert hot["control"]["fit_p"]["control"] > hot["level"]  # the no-draft run follows the reference
    assert _exact_on_the_same_outputs(hot).verdict == "lossy"  # the exact test agrees
    assert "verdict: lossy" in output and "T=0.8, context-conditioned: lossy" in output
    summary = (next(tmp_path.glob("lossless/*/summary.md"))).read_text()
    assert "## Verdicts" in summary and "context-conditioned: lossy" in summary and "80% power" in summary


def test_served_the_check_against_a_running_server_passes(imperfect_server, tmp_path) -> None:
    """The shared server (the imperfect tiny pair, EAGLE k=3, with the fix): seeded completions at 0 and
    1.0, scored by the target here. The tiny target is known, so the exact cross-check runs too."""
    args = ["target=tiny", "draft=tiny_eagle_imperfect", f"lookahead={K}", "dataset.num_prompts=8",
            "generation.max_tokens=24", "generation.ignore_eos=true", "--samples", "8", "--url", imperfect_server.url]
    record, output = _lossless(tmp_path, args, "0,1.0")
    assert record["verdict"] == "pass" and record["settings"]["url"] == imperfect_server.url, output[-4000:]
    assert record["greedy"]["diverged"] == []
    context, exact = record["sampled"]
    assert context["test"] == check.CONTEXT and exact["test"] == check.EXACT
    assert sum(context["counts"]) == 8 * 23 and len({o["seed"] for o in context["outputs"]}) == 8
    assert len(record["engine_start_s"]) == 1  # the scoring engine only: the draft ran on the server
