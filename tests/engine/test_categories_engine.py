"""Acceptance by prompt category on a real vLLM (CPU build) with the imperfect tiny pair, offline and
served: each category's counters equal what the simulation of greedy EAGLE verification
(tests/tiny_sim.py) predicts for that category's prompts, exactly. No engine of its own: the offline
run and the server are the shared ones of tests/engine/conftest.py (``imperfect_offline``,
``imperfect_server``), read through each benchmark's own counter deltas."""

from __future__ import annotations

import json

import pytest

from llama4spec.engine.bench_flags import builtin_category_file
from llama4spec.tiny.prompts import CATEGORIES, builtin_items
from tests import tiny_sim
from tests.helpers import run_cli, run_dir_of

pytestmark = pytest.mark.engine

K = 3
MAX_TOKENS = 64
PROMPTS = 8
BENCH_OUTPUT = 32


def _raw(record: dict) -> dict:
    return {key: record[key] for key in ("num_drafts", "num_draft_tokens", "num_accepted_tokens", "accepted_per_pos")}


@pytest.fixture(scope="module")
def offline(imperfect_offline):
    return imperfect_offline


def test_offline_counters_per_category_equal_the_simulation(offline) -> None:
    _, record = offline
    by_category = record["stats"]["by_category"]
    items = builtin_items(PROMPTS)
    assert set(by_category) == set(CATEGORIES)
    for category, measured in by_category.items():
        prompts = [text for text, c in items if c == category]
        expected = tiny_sim.predict(prompts, MAX_TOKENS, K, tiny_sim.imperfect)
        assert _raw(measured) == expected.record(), category
        assert measured["num_prompts"] == len(prompts)
        assert measured["total_num_output_tokens"] == expected.output_tokens
    # the categories differ, and in the direction their names say
    lengths = {c: m["mean_acceptance_length"] for c, m in by_category.items()}
    assert lengths["clean_start"] > lengths["early_miss"]
    # the whole run's counters are the sum of the categories'
    total = record["stats"]["acceptance"]
    assert total["num_drafts"] == sum(m["num_drafts"] for m in by_category.values())
    assert total["accepted_per_pos"] == [sum(m["accepted_per_pos"][j] for m in by_category.values()) for j in range(K)]


def test_offline_prints_the_category_by_position_table(offline) -> None:
    stdout, record = offline
    assert "acceptance by category: tiny_eagle_imperfect k=3" in stdout
    for category, measured in record["stats"]["by_category"].items():
        row = next(line for line in stdout.splitlines() if f"│ {category} " in line)
        assert f"{measured['mean_acceptance_length']:.3f}" in row
        for rate in measured["acceptance_rate_per_position"]:
            assert f"{rate:.3f}" in row
    assert "speculation pays least on: early_miss" in stdout


RUNBOOK = """\
name: categories
overrides: [target=tiny, memory=cpu, bench=random_tiny, draft=tiny_eagle_imperfect, lookahead={k},
            bench.num_prompts={n}, bench.output_len={out}]
steps:
{benches}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory, imperfect_server):
    """One benchmark per category of the built-in prompts (its file holds 16 prompts: 16 requests
    send each once) against the shared server of the imperfect pair."""
    base = tmp_path_factory.mktemp("served")
    url = imperfect_server.url
    benches = "".join(f"  - id: bench_{c}\n    kind: bench\n    url: {url}\n    overrides: [bench.category={c}]\n"
                      for c in CATEGORIES)
    # the same prompts again after a warm-up run, twice: only the counted runs' requests are counted
    benches += (f"  - id: bench_warm\n    kind: bench\n    url: {url}\n    overrides: [bench.category={CATEGORIES[0]}]\n"
                f"    warmup: 3\n    repeats: 2\n")
    path = base / "categories.yaml"
    path.write_text(RUNBOOK.format(k=K, n=16, out=BENCH_OUTPUT, benches=benches))
    result = run_cli("run", str(path), "--runs-dir", str(base / "runs"), timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return run_dir_of(base / "runs")


def _file_prompts(category: str) -> list[str]:
    return [json.loads(line)["prompt"] for line in builtin_category_file(category).read_text().splitlines()]


def test_served_counters_per_category_equal_the_simulation(served) -> None:
    for category in CATEGORIES:
        record = json.loads((served / f"bench_{category}" / "record.json").read_text())
        prompts = _file_prompts(category)
        assert len(prompts) == 16
        expected = tiny_sim.predict(prompts, BENCH_OUTPUT, K, tiny_sim.imperfect)
        assert _raw(record["acceptance"]) == expected.record(), category
        assert record["result"]["completed"] == 16 and record["result"]["failed"] == 0
        assert "--dataset-name" in record["argv"] and "custom" in record["argv"]
        assert str(builtin_category_file(category)) in record["argv"]


def test_warm_up_requests_stay_out_of_the_counted_runs(served) -> None:
    """A warm-up run of 3 requests, then 2 counted runs of the category's 16 prompts: each run's
    counters equal the prediction for its 16 prompts alone, and the point's are their sum."""
    record = json.loads((served / "bench_warm" / "record.json").read_text())
    expected = tiny_sim.predict(_file_prompts(CATEGORIES[0]), BENCH_OUTPUT, K, tiny_sim.imperfect).record()
    assert record["warmup"] == 3 and record["repeats"] == 2
    assert json.loads((served / "bench_warm" / "warmup.json").read_text())["completed"] == 3
    for run in record["runs"]:
        assert _raw(run["acceptance"]) == expected
        assert run["argv"][run["argv"].index("--num-warmups") + 1] == "0"
    assert _raw(record["acceptance"]) == {key: [2 * v for v in value] if isinstance(value, list) else 2 * value
                                          for key, value in expected.items()}
