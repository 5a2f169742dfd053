"""Acceptance arithmetic and parsing (pure)."""

from __future__ import annotations

from types import SimpleNamespace as NS

from llama4spec.results.acceptance import AcceptanceCounters, RunStats, from_offline_metrics, from_prometheus_text


def test_offline_metrics_sum_over_engines():
    metrics = [
        NS(name="vllm:spec_decode_num_drafts", value=10),
        NS(name="vllm:spec_decode_num_drafts", value=5),
        NS(name="vllm:spec_decode_num_draft_tokens", value=45),
        NS(name="vllm:spec_decode_num_accepted_tokens", value=30),
        NS(name="vllm:spec_decode_num_accepted_tokens_per_pos", values=[9, 7, 4]),
        NS(name="vllm:spec_decode_num_accepted_tokens_per_pos", values=[5, 3, 2]),
        NS(name="vllm:generation_tokens", value=99),
    ]
    c = from_offline_metrics(metrics)
    assert (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens) == (15, 45, 30)
    assert c.accepted_per_pos == [14, 10, 6]
    assert c.mean_acceptance_length == 3.0
    assert c.rate_per_position() == [14 / 15, 10 / 15, 6 / 15]
    assert c.acceptance_rate == 30 / 45


def test_deltas_and_empty_counters():
    after = AcceptanceCounters(10, 30, 20, [8, 7, 5])
    before = AcceptanceCounters(4, 12, 6, [3, 2, 1])
    d = after - before
    assert (d.num_drafts, d.num_accepted_tokens, d.accepted_per_pos) == (6, 14, [5, 5, 4])
    assert AcceptanceCounters().mean_acceptance_length is None
    assert AcceptanceCounters().rate_per_position(3) == [0.0, 0.0, 0.0]


PROM = """# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 12.0
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 36.0
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 30.0
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 12.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 10.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 8.0
"""


def test_prometheus_text():
    c = from_prometheus_text(PROM)
    assert (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens) == (12, 36, 30)
    assert c.accepted_per_pos == [12, 10, 8]
    assert c.mean_acceptance_length == 3.5


def test_acceptance_has_one_serialised_shape_that_round_trips():
    counters = AcceptanceCounters(20, 60, 45, [18, 15, 12])
    stats = RunStats(100, counters, k=3, wall_time_s=2.0)
    record = stats.to_record()
    assert set(record) == {"total_num_output_tokens", "acceptance"}
    acc = record["acceptance"]
    assert set(acc) == {"num_drafts", "num_draft_tokens", "num_accepted_tokens", "accepted_per_pos",
                        "draft_tokens_per_draft", "mean_acceptance_length", "acceptance_rate",
                        "acceptance_rate_per_position"}
    assert acc["draft_tokens_per_draft"] == 3.0
    assert acc == counters.to_record(3)  # offline and served records alike
    assert acc["acceptance_rate_per_position"] == [0.9, 0.75, 0.6]
    assert _read_back(acc) == counters
    assert stats.output_tokens_per_s == 50.0
    none = RunStats(100, None, None).to_record()
    assert none == {"total_num_output_tokens": 100, "acceptance": None}
    assert _read_back(None) is None


def _read_back(acceptance):
    """Counters as a bench record's reader gives them back (``records.bench``)."""
    from llama4spec.results.bench import BenchRecord

    return BenchRecord.from_dict({"kind": "llama4spec.bench", "label": "x", "lookahead": 3, "acceptance": acceptance}).acceptance
