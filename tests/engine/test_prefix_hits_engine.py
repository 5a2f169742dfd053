"""The prefix cache's hit rate on the engine: vLLM's prefix_repetition prompts against the shared
server of the imperfect pair (prefix caching left to vLLM's default: on), one request at a time.

Every prompt is one of P prefixes + a suffix of its own. The first prompt of a prefix finds nothing;
each later one finds the prefix's whole blocks, less the last, which vLLM drops from every hit under
EAGLE (its default block drop). The record's counters are the server's deltas around its own run,
so the hits are exactly (N - P) x (whole blocks of the prefix - 1) x the block size, and the tokens
looked up are the prompts' tokens. The block size is the server's own (``vllm:cache_config_info``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.conftest import K
from tests.helpers import run_cli

pytestmark = pytest.mark.engine

PROMPTS, PREFIXES, PREFIX_LEN = 8, 2, 384


def _block_size(url: str) -> int:
    import requests
    from prometheus_client.parser import text_string_to_metric_families

    page = requests.get(f"{url}/metrics", timeout=10).text
    info = next(f for f in text_string_to_metric_families(page) if f.name == "vllm:cache_config_info")
    assert info.samples[0].labels["enable_prefix_caching"] == "True"
    return int(info.samples[0].labels["block_size"])


def test_hits_are_the_later_prompts_whole_prefix_blocks_less_the_dropped_one(imperfect_server, tmp_path: Path) -> None:
    block = _block_size(imperfect_server.url)
    assert PREFIX_LEN // block >= 2, f"a {PREFIX_LEN}-token prefix holds fewer than 2 blocks of {block}"
    res = run_cli("bench", "draft=tiny_eagle_imperfect", f"lookahead={K}", "bench=prefix_repetition_tiny",
                  "bench.max_concurrency=1", f"bench.num_prompts={PROMPTS}", "bench.output_len=8",
                  f"bench.prefix_repetition_num_prefixes={PREFIXES}", f"bench.prefix_repetition_prefix_len={PREFIX_LEN}",
                  "bench.seed=7", "--url", imperfect_server.url, "--out", str(tmp_path / "b"), timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    record = json.loads((tmp_path / "b" / "record.json").read_text())
    cache = record["prefix_cache"]
    assert record["result"]["completed"] == PROMPTS
    assert cache["queries"] == record["result"]["total_input_tokens"]
    assert cache["hits"] == (PROMPTS - PREFIXES) * (PREFIX_LEN // block - 1) * block
    assert cache["hit_rate"] == pytest.approx(cache["hits"] / cache["queries"])
