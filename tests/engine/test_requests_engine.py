"""Per-request acceptance from a real server and the tail it explains.

The shared server of the imperfect pair (``imperfect_server``, tests/engine/conftest.py; llama4spec
starts every server with a draft with ``--per-request-spec-decode-metrics summary``): one
benchmark's requests add up exactly to its ``/metrics`` deltas, and each request's counters are the
simulation's for its prompt. Then one small server of the contrast pair (the draft wrong after every
word of one block): the requests continuing inside the block accept nothing, the others every draft,
and the P90 TPOT tail of 120 requests is all low-acceptance requests of category in_block.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from llama4spec.results.bench import read
from llama4spec.analysis import tail
from llama4spec.tiny import contrast
from tests import tiny_sim
from tests.engine.conftest import serving
from tests.helpers import run_cli

pytestmark = pytest.mark.engine

K = 3
CATEGORY = "early_miss"
OUTPUT = 32


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_per_request_sums_equal_the_metrics_deltas(imperfect_server, tmp_path: Path) -> None:
    from llama4spec.engine.bench_flags import builtin_category_file

    out = tmp_path / "b"
    res = run_cli("bench", "draft=tiny_eagle_imperfect", f"lookahead={K}", f"bench.category={CATEGORY}",
                  "bench.num_prompts=16", f"bench.output_len={OUTPUT}", "--url", imperfect_server.url,
                  "--out", str(out), timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    record = json.loads((out / "record.json").read_text())
    check = record["requests_check"]
    assert check["equal"] is True and check["requests"] == 16 and check["failed"] == 0, check
    assert check["sums"] == {key: record["acceptance"][key] for key in check["sums"]}
    assert "per-request acceptance: the sums over 16 requests equal the /metrics deltas" in res.stdout
    prompts = {_sha(p): p for p in (json.loads(line)["prompt"] for line in
                                    builtin_category_file(CATEGORY).read_text().splitlines())}
    for row in record["requests"]:  # each request's counters: the simulation's for its prompt
        expected = tiny_sim.predict([prompts[row["prompt_sha256"]]], OUTPUT, K, tiny_sim.imperfect)
        assert (row["drafts"], row["accepted_per_pos"]) == (expected.num_drafts, expected.accepted_per_pos), row
        assert row["category"] == CATEGORY and row["output_tokens"] == OUTPUT and row["tpot_ms"] > 0
    with open(out / "requests.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 16 and {r["category"] for r in rows} == {CATEGORY}


@pytest.fixture(scope="module")
def contrast_bench(tmp_path_factory, tiny_dir) -> tuple[str, Path]:
    """One server of the contrast pair and one benchmark of its prompts (bench=tiny_contrast:
    120 requests of 16 tokens at concurrency 8)."""
    where = tmp_path_factory.mktemp("contrast")
    with serving(["draft=tiny_eagle_contrast", f"lookahead={K}"], where) as server:
        res = run_cli("bench", "draft=tiny_eagle_contrast", "bench=tiny_contrast", f"lookahead={K}",
                      "--url", server.url, "--out", str(where / "bench"), timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return res.stdout, where / "bench"


def test_the_contrast_pairs_tpot_tail_is_the_drafts(contrast_bench) -> None:
    stdout, out = contrast_bench
    record = read(out / "record.json")
    assert record.requests_check()["equal"], record.requests_check()
    rows = record.requests
    assert len(rows) == 120 and all(r.ok for r in rows)
    lengths = {c: {r.acceptance_length for r in rows if r.category == c} for c in contrast.CATEGORIES}
    assert lengths == {contrast.IN_BLOCK: {1.0}, contrast.OUT_BLOCK: {K + 1.0}}
    found = tail.attribute(rows)
    assert found is not None and found.tail >= tail.MIN_TAIL and found.drafts_fault
    low = next(c for c in found.categories if c.name == f"category {contrast.IN_BLOCK}")
    assert low.share_tail >= 0.9 and low.p_value < 0.01, found.to_record()
    assert "The TPOT tail is the draft's" in stdout
    (out / "tail.json").write_text(json.dumps(found.to_record(), indent=2))  # kept with the run (docs quote it)
