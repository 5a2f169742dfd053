"""Attainment from vLLM's goodput: good requests over requests sent, failed requests as misses."""

from __future__ import annotations

import json

import pytest

from llama4spec.results.bench import BenchRecord, read


def _run(completed=90, failed=10, goodput=1.5, duration=60.0, **more):
    result = {"completed": completed, "failed": failed, "duration": duration, "request_goodput": goodput,
              "output_throughput": 100.0, "p99_ttft_ms": 900.0, "p99_tpot_ms": 40.0, "p99_e2el_ms": 4000.0,
              "p95_ttft_ms": 700.0, "p97.5_tpot_ms": 35.0, **more}
    return BenchRecord(label="run", returncode=0, result=result)


def test_attainment_counts_failed_requests_as_misses():
    run = _run()
    assert run.requests_sent == 100 and run.good_requests == 90 and run.request_goodput == 1.5
    assert run.attainment == pytest.approx(0.90)


def test_a_point_pools_its_runs_and_keeps_each_runs_attainment():
    point = BenchRecord.of_runs("p", [_run(goodput=1.5), _run(completed=100, failed=0, goodput=100 / 60)])
    assert [r.attainment for r in point.runs] == pytest.approx([0.9, 1.0])
    assert point.attainment == pytest.approx(190 / 200)


def test_a_run_whose_every_request_failed_attains_nothing():
    run = _run(completed=0, failed=50, goodput=0.0)
    assert not run.counted and run.attainment == 0.0


def test_without_goodput_there_is_no_attainment_and_the_summary_is_unchanged():
    run = _run(goodput=None)
    assert run.request_goodput is None and run.attainment is None
    assert "attainment" not in run.figures() and "request_goodput" not in run.figures()
    old = BenchRecord.from_dict({"kind": "llama4spec.bench", "label": "old", "returncode": 0,
                                 "result": {"completed": 5, "output_throughput": 3.0}})
    assert old.attainment is None and old.counted


def test_summary_carries_goodput_attainment_and_the_p99_of_each_metric():
    figures = _run().figures()
    assert figures["request_goodput"] == 1.5 and figures["attainment"] == pytest.approx(0.9)
    assert (figures["p99_ttft_ms"], figures["p99_tpot_ms"], figures["p99_e2el_ms"]) == (900.0, 40.0, 4000.0)


def test_percentiles_read_as_vllm_names_them():
    run = _run()
    assert run.percentile_ms("ttft", 95) == 700.0 and run.percentile_ms("tpot", 97.5) == 35.0
    assert run.percentile_ms("e2el", 95) is None


def test_a_plain_vllm_result_file_reads_back(tmp_path):
    path = tmp_path / "vllm.json"
    path.write_text(json.dumps(_run().result))
    assert read(path).attainment == pytest.approx(0.9)


def test_attainment_with_the_clients_wait_counted():
    detailed = {"ttfts": [0.2, 0.2, 0.9, 0.0], "latencies": [1.0, 1.0, 1.5, 0.0], "output_lens": [11, 11, 11, 0],
                "queue_times": [0.0, 0.5, 0.0, 0.0], "errors": ["", "", "", "timeout"]}
    run = _run(**detailed)
    # 1: good; 2: TTFT 0.2 s after 0.5 s in the client's queue misses 0.5 s; 3: TTFT 0.9 s misses; 4: failed
    assert run.attainment_with_queue({"ttft": 500.0}) == 0.25
    assert run.attainment_with_queue({"tpot": 70.0}) == 0.25  # TPOT 0.08, 0.08, 0.06 s; the failed one misses
    assert run.attainment_with_queue({"e2el": 1200.0}) == 0.25
    assert _run().attainment_with_queue({"ttft": 500.0}) is None  # no per-request data kept
    assert _run(**{**detailed, "errors": ["", ""]}).attainment_with_queue({"ttft": 500.0}) is None
