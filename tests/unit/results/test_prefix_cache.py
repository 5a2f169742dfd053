"""The prefix cache's hit rate from a server's counters: read from a /metrics page in the exposition
format prometheus_client writes (the library vLLM's own counters are), as a delta around a run,
kept in the bench record and read back through its model."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest

from llama4spec.errors import UserError
from llama4spec.results.bench import BenchRecord
from llama4spec.results.prefix_cache import HITS, QUERIES, PrefixCache, from_prometheus_text


def _page(queries: dict[str, int], hits: dict[str, int]) -> str:
    """A /metrics page with the two counters per engine, as a vLLM server exposes them."""
    registry = CollectorRegistry()
    q = Counter(QUERIES, "Prefix cache queries", ["engine"], registry=registry)
    h = Counter(HITS, "Prefix cache hits", ["engine"], registry=registry)
    for engine, value in queries.items():
        q.labels(engine).inc(value)
    for engine, value in hits.items():
        h.labels(engine).inc(value)
    return generate_latest(registry).decode()


def test_counters_are_summed_over_engines_and_the_run_is_the_delta() -> None:
    before = from_prometheus_text(_page({"0": 100, "1": 50}, {"0": 20, "1": 0}))
    after = from_prometheus_text(_page({"0": 900, "1": 650}, {"0": 500, "1": 300}))
    assert before == PrefixCache(150, 20)
    run = after - before
    assert run == PrefixCache(1400, 780) and run.hit_rate == pytest.approx(780 / 1400)
    assert run.to_record() == {"queries": 1400, "hits": 780, "hit_rate": pytest.approx(780 / 1400)}


def test_a_page_without_the_counters_reads_as_no_lookup() -> None:
    found = from_prometheus_text("# HELP other x\n# TYPE other counter\nother_total 3.0\n")
    assert found == PrefixCache(0, 0) and found.hit_rate is None


def _run(cache: PrefixCache | None, throughput: float = 10.0) -> BenchRecord:
    return BenchRecord(label="p", returncode=0, result={"completed": 4, "output_throughput": throughput},
                       prefix_cache=cache)


def test_a_point_sums_its_counted_runs_and_the_record_reads_back() -> None:
    point = BenchRecord.of_runs("p", [_run(PrefixCache(1000, 600)), _run(PrefixCache(1000, 800), 12.0)])
    assert point.prefix_cache == PrefixCache(2000, 1400)
    assert point.figures()["prefix_cache_hit_rate"] == pytest.approx(0.7)
    back = BenchRecord.from_dict(point.to_dict())
    assert back.prefix_cache == PrefixCache(2000, 1400)
    assert [r.prefix_cache for r in back.runs] == [PrefixCache(1000, 600), PrefixCache(1000, 800)]
    assert BenchRecord.from_dict(_run(None).to_dict()).prefix_cache is None


def test_a_record_with_more_hits_than_lookups_is_one_line() -> None:
    data = _run(PrefixCache(100, 10)).to_dict()
    data["prefix_cache"]["hits"] = 101
    with pytest.raises(UserError) as err:
        BenchRecord.from_dict(data, where="rec.json")
    assert len(err.value.problems) == 1 and "'prefix_cache.hits' is 101" in err.value.problems[0]
    assert "at most the 100 tokens looked up" in err.value.problems[0]


def test_the_sweep_reports_line_says_the_hit_rate_and_the_setting() -> None:
    from llama4spec.sweep.prefix_part import line

    point = BenchRecord.of_runs("p", [_run(PrefixCache(2000, 500)), _run(PrefixCache(2000, 1500))])
    kept = {"serve": {"enable_prefix_caching": None}, "draft": {"disable_eagle_block_drop": True}}
    assert line("p-c4", kept, point) == ("p-c4: hit rate 50.0% (2,000 of 4,000 prompt tokens found in the cache, "
                                         "over 2 counted run(s); prefix caching on (vLLM's default), last block "
                                         "of each hit kept)")
    off = {"serve": {"enable_prefix_caching": False}, "draft": {"disable_eagle_block_drop": None}}
    assert line("q", off, _run(PrefixCache(0, 0))) == ("q: no prompt token looked up in the prefix cache "
                                                        "(prefix caching off)")
    assert line("r", off, _run(None)) is None
