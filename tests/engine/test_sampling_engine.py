"""Speculative sampling at temperature > 0 on vLLM's CPU build, measured against the exact values
of the spread tiny pair (``llama4spec.tiny.spread``), with and without this project's vLLM plugin
(``llama4spec.engine.cpu_fix``). Three engine starts.

With the plugin, one offline engine runs every prompt at T = 0, 0.6 and 1.0 in one batch, each
request with a seed of its own (the rejection sampler draws from per-request generators), and vLLM's
per-request counters (``per_request_spec_decode_metrics='detailed'``) split acceptance by temperature.
Each request's final step is dropped (its ``max_tokens`` may cut it short); the others are independent
Bernoulli trials at each draft position, so the count of steps that accepted position i is binomial
with the expected rate r^(i+1). Every measured rate must hold its expectation inside an exact
(Clopper-Pearson) interval at a joint 99.9% level (Bonferroni over every temperature and position).
Greedy drafting: r = p_T(successor). Probabilistic drafting (``draft.sample_method=probabilistic``):
r = sum min(p_T, q_T), one minus the total-variation distance between target and draft.

Without the plugin (``VLLM_PLUGINS=""``, vLLM's allow-list) the doctor refuses the run (exit 2,
nothing started), and forced, vLLM's broken CPU fallback measures acceptance against uninitialised
per-token temperatures: on the perfect pair, whose target puts p >= 0.99997 on every drafted word,
under half the draft tokens are accepted (measured: 1 of 87).
"""

from __future__ import annotations

import json

import pytest

from llama4spec.tiny import spread
from tests.helpers import run_cli

pytestmark = pytest.mark.engine

K = 3
PROMPTS, TOKENS = 16, 128
JOINT = 0.999  # the joint confidence of every (temperature, position) interval in one run
PLUGIN_LINE = "CPU expand-kernel fix applied (vLLM 0.32.0)"


def _offline(tmp_path, temperatures: list[float], *extra: str) -> tuple[dict, str]:
    path = tmp_path / "run.json"
    done = run_cli("offline", "target=tiny_spread", f"lookahead={K}",
                   f"offline.temperatures=[{','.join(f'{t:g}' for t in temperatures)}]",
                   f"dataset.num_prompts={PROMPTS}", f"generation.max_tokens={TOKENS}", "generation.ignore_eos=true",
                   *extra, "--json", str(path), "-v", timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(path.read_text()), done.stdout + done.stderr


def positions(requests: list[dict]) -> tuple[list[int], list[int]]:
    """Per draft position: (steps that drafted it, steps that accepted it), each request's final step left out."""
    drafted, accepted = [0] * K, [0] * K
    for r in requests:
        for a, d in list(zip(r["per_step_accepted"], r["per_step_drafted"]))[:-1]:
            for i in range(d):
                drafted[i] += 1
                accepted[i] += a > i
    return drafted, accepted


def assert_exact(record: dict, method: str) -> list[str]:
    """Every temperature's per-position acceptance holds the spread pair's expectation; returns the lines."""
    from scipy.stats import binomtest

    stats = record["stats"]
    assert stats["requests_match_counters"] is True  # vLLM's per-request counters add up to its engine counters
    runs = stats["by_temperature"]
    level = 1 - (1 - JOINT) / (len(runs) * K)
    lines, misses = [], []
    for run in runs:
        expected = spread.expected_rates(run["temperature"], K, method)
        assert run["expected_rate_per_position"] == expected  # what the table shows as "exact"
        drafted, accepted = positions(run["requests"])
        for i in range(K):
            assert drafted[i] >= 300, drafted  # enough steps for the interval to mean something
            ci = binomtest(accepted[i], drafted[i]).proportion_ci(level, method="exact")
            line = (f"T={run['temperature']:g} position {i}: {accepted[i]}/{drafted[i]} = "
                    f"{accepted[i] / drafted[i]:.3f}, expected {expected[i]:.3f}, interval [{ci.low:.3f}, {ci.high:.3f}]")
            lines.append(line)
            if not ci.low <= expected[i] <= ci.high:
                misses.append(line)
    assert not misses, "\n".join(misses + ["all:"] + lines)
    return lines


def test_with_the_plugin_greedy_drafting_accepts_exactly_p_to_the_position(tmp_path, tiny_dir) -> None:
    record, output = _offline(tmp_path, [0.0, 0.6, 1.0])
    assert PLUGIN_LINE in output
    assert_exact(record, "greedy")
    # temperature changes acceptance: all at T = 0, about p^(i+1) above it
    rates = {run["temperature"]: run["acceptance_rate_per_position"] for run in record["stats"]["by_temperature"]}
    assert rates[0.0] == [1.0] * K and rates[1.0][0] < rates[0.6][0] < 1.0


def test_probabilistic_drafting_accepts_one_minus_the_total_variation(tmp_path, tiny_dir) -> None:
    record, output = _offline(tmp_path, [0.6, 1.0], "draft.sample_method=probabilistic")
    assert record["config"]["draft"]["sample_method"] == "probabilistic"
    assert_exact(record, "probabilistic")


def test_without_the_plugin_the_doctor_refuses_and_a_forced_run_shows_the_defect(tmp_path, tiny_dir) -> None:
    off = {"VLLM_PLUGINS": ""}
    hot = ["generation.temperature=0.8", "dataset.num_prompts=2", "generation.max_tokens=16", f"lookahead={K}"]
    refused = run_cli("offline", *hot, env=off, timeout=300)
    assert refused.returncode == 2 and "with a draft on vLLM's CPU build" in refused.stderr, refused.stderr
    forced = run_cli("offline", *hot, "--force", "--json", str(tmp_path / "run.json"), env=off, timeout=900)
    assert forced.returncode == 0, forced.stdout[-3000:] + forced.stderr[-3000:]
    acc = json.loads((tmp_path / "run.json").read_text())["stats"]["acceptance"]
    assert acc["num_draft_tokens"] > 0
    assert acc["num_accepted_tokens"] < 0.5 * acc["num_draft_tokens"], acc  # the defect: measured 1 of 87
