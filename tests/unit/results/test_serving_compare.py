"""The comparison table from saved results: the tool's records and plain vllm bench serve JSON."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from llama4spec.results import comparison as compare
from llama4spec.errors import UserError
from tests.helpers import REPO

DATA = REPO / "tests" / "data" / "serving"
GOLDEN = REPO / "tests" / "golden"


def _render(baseline: Path, candidate: Path) -> str:
    console = Console(record=True, width=100, file=io.StringIO())
    compare.render(console, compare.load(baseline), compare.load(candidate))
    return console.export_text()


def test_table_matches_golden() -> None:
    text = _render(DATA / "scout_baseline.vllm.json", DATA / "scout_eagle.record.json")
    assert text == (GOLDEN / "compare_scout_reference.txt").read_text()


def test_speedups_are_oriented_so_above_one_is_better() -> None:
    rows = {r[0]: r for r in compare.rows(compare.load(DATA / "scout_baseline.vllm.json"),
                                          compare.load(DATA / "scout_eagle.record.json"))}
    assert rows["output throughput (tok/s)"][3] == pytest.approx(1114.62 / 710.51)
    assert rows["mean TPOT (ms)"][3] == pytest.approx(22.19 / 13.85)
    assert rows["mean TTFT (ms)"][3] == pytest.approx(61.32 / 88.57)
    assert rows["median TPOT (ms)"][1:] == (None, None, None)
    assert rows["acceptance length"][1:3] == (None, 2.66)
    assert rows["acceptance at position 1"][2] == 0.78


def test_plain_vllm_json_carries_its_own_acceptance(tmp_path: Path) -> None:
    data = json.loads((DATA / "scout_baseline.vllm.json").read_text())
    data.update(spec_decode_acceptance_length=3.5, spec_decode_per_position_acceptance_rates=[0.9, 0.8, 0.8])
    res = compare.from_json(data, "x")
    assert res.acceptance_length == 3.5 and res.acceptance_rates == [0.9, 0.8, 0.8]


def test_unfinished_record_and_foreign_json_are_refused(tmp_path: Path) -> None:
    failed = tmp_path / "failed.json"
    failed.write_text(json.dumps({"kind": "llama4spec.bench", "label": "x", "returncode": 1}))
    with pytest.raises(UserError, match="did not finish"):
        compare.load(failed)
    other = tmp_path / "other.json"
    other.write_text("{\"a\": 1}")
    with pytest.raises(UserError, match="not a benchmark result"):
        compare.load(other)


def test_cli_compare_and_its_errors(cli, tmp_path: Path) -> None:
    res = cli("compare", str(DATA / "scout_baseline.vllm.json"), str(DATA / "scout_eagle.record.json"), "--markdown",
                  timeout=120)
    assert res.returncode == 0, res.stderr
    assert "| output throughput (tok/s) | 710.51 | 1,114.62 | 1.57x |" in res.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    res = cli("compare", str(bad), str(tmp_path / "missing.json"), timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.startswith("error: ") and "not valid JSON" in res.stderr


def test_the_servers_prefix_cache_hit_rates_are_a_row_and_in_the_json_where_recorded() -> None:
    import dataclasses

    from llama4spec.results.prefix_cache import PrefixCache

    base, cand = compare.load(DATA / "scout_baseline.vllm.json"), compare.load(DATA / "scout_eagle.record.json")
    assert "prefix-cache hit rate" not in {r[0] for r in compare.rows(base, cand)}  # neither recorded: no row
    cand = dataclasses.replace(cand, prefix_cache=PrefixCache(queries=1000, hits=400))
    rows = {r[0]: r for r in compare.rows(base, cand)}
    assert rows["prefix-cache hit rate"][1:] == (None, 0.4, None)
    assert compare.document(base, cand)["prefix_cache_hit_rate"] == {"baseline": None, "candidate": 0.4}
