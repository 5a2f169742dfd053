"""Tail attribution (``analysis.tail``): the P90 TPOT tail of a point's requests is the draft's when
low-acceptance requests are over-represented in it (Fisher's exact test), else the server's; the
TTFT tail is described by queueing and arrival."""

from __future__ import annotations

import pytest
from scipy.stats import fisher_exact

from llama4spec.results.requests import RequestRow
from llama4spec.analysis import tail


def _row(i: int, tpot: float, accepted_per_step: float, category: str, ttft: float = 10.0,
         queue: float = 0.0) -> RequestRow:
    steps = 10
    return RequestRow(id=f"r-{i}", ok=True, index=i, category=category, ttft_ms=ttft, tpot_ms=tpot,
                      e2e_ms=ttft + 31 * tpot, queue_ms=queue, arrival_ms=float(i), output_tokens=32,
                      drafts=steps, draft_tokens=3 * steps, accepted=round(accepted_per_step * steps))


def _contrast(n: int = 120) -> list[RequestRow]:
    """Half the requests accept nothing and are slow, half accept every draft and are fast."""
    rows = []
    for i in range(n):
        low = i % 2 == 0
        rows.append(_row(i, (20.0 if low else 6.0) + i * 0.01, 0.0 if low else 3.0,
                         "in_block" if low else "out_block"))
    return rows


def test_a_tail_of_low_acceptance_requests_is_the_drafts() -> None:
    a = tail.attribute(_contrast())
    assert a is not None and a.requests == 120 and a.tail >= tail.MIN_TAIL
    assert a.low_below == pytest.approx(2.5)
    assert a.low.share_all == pytest.approx(0.5) and a.low.share_tail == 1.0 and a.low.ratio == pytest.approx(2.0)
    assert a.drafts_fault and a.sentence().startswith("The TPOT tail is the draft's")
    low, high = a.categories
    assert (low.name, low.share_tail, low.acceptance_length) == ("category in_block", 1.0, 1.0)
    assert (high.name, high.in_tail, high.acceptance_length) == ("category out_block", 0, 4.0)
    assert high.p_value == 1.0 and not high.over
    expected = fisher_exact([[a.tail, 60 - a.tail], [0, 60]], alternative="greater").pvalue
    assert low.p_value == pytest.approx(expected) and low.p_value < 1e-3
    assert tail.table_rows(a)[1][:5] == ["category in_block", "60", str(a.tail), "50%", "100%"]
    record = a.to_record()
    assert record["drafts_fault"] is True and record["categories"][0]["over_represented"] is True


def test_a_tail_unrelated_to_acceptance_is_the_servers() -> None:
    rows = [_row(i, 5.0 + (i * 37 % 200) * 0.01, 0.0 if i % 2 else 3.0, "a" if i % 2 else "b") for i in range(200)]
    a = tail.attribute(rows)
    assert a is not None and not a.drafts_fault
    assert a.sentence().startswith("The TPOT tail is the server's")
    assert a.low.p_value > tail.LEVEL


def test_fewer_than_ten_requests_beyond_the_p90_are_not_attributed() -> None:
    assert tail.attribute(_contrast(60)) is None  # 6 beyond the P90
    assert tail.attribute([]) is None
    failed = [RequestRow(id=f"r-{i}", ok=False) for i in range(200)]
    assert tail.attribute(failed) is None
    no_counters = [RequestRow(id=f"r-{i}", ok=True, tpot_ms=float(i)) for i in range(200)]
    assert tail.attribute(no_counters) is None


def test_the_ttft_tail_is_told_by_its_queueing_and_arrival() -> None:
    rows = [_row(i, 10.0, 1.0, "a", ttft=100.0 + i if i >= 100 else 10.0 + i * 0.01, queue=50.0 if i >= 100 else 1.0)
            for i in range(120)]
    t = tail.ttft_tail(rows)
    assert t is not None and t.tail == 12 and t.queue_tail_ms == 50.0 and t.queue_rest_ms == 1.0
    assert t.arrival_tail_ms > t.arrival_rest_ms
    assert t.sentence().startswith("TTFT is fixed before the first verification step")
    assert tail.ttft_tail(rows[:50]) is None


def test_thousands_of_categories_cost_what_twenty_do() -> None:
    import time

    rows = [_row(i, 6.0 + (i % 97) * 0.3, (i % 4) * 0.75, f"c{i % 4000}") for i in range(12_000)]
    started = time.process_time()
    a = tail.attribute(rows)
    took = time.process_time() - started
    assert a is not None and len(a.categories) == tail.MAX_CATEGORIES + 1
    assert a.categories[-1].name == f"other categories ({4000 - tail.MAX_CATEGORIES})"
    assert sum(c.requests for c in a.categories) == 12_000
    assert took < 3.0, f"{took:.1f} s for 12,000 requests in 4,000 categories"


def test_few_categories_are_each_tested_as_before() -> None:
    a = tail.attribute(_contrast())
    assert [c.name for c in a.categories] == ["category in_block", "category out_block"]


def test_a_report_attributes_each_point_once(monkeypatch) -> None:
    from llama4spec.sweep import tables as render, to_json as sweep_json
    from llama4spec.stats.point import Point
    from llama4spec.stats.speedup_model import analyse

    points = [Point(id="none-c4", draft="none", lookahead=None, concurrency=4, output_throughput=100.0,
                    mean_tpot_ms=10.0, mean_ttft_ms=10.0),
              Point(id="eagle-k3-c4", draft="eagle", lookahead=3, concurrency=4, output_throughput=150.0,
                    mean_tpot_ms=7.0, mean_ttft_ms=10.0, acceptance_length=2.0, rates=(0.5, 0.3, 0.2),
                    num_drafts=100, accepted_per_pos=(50, 30, 20), requests=tuple(_contrast()))]
    calls = []
    real = tail.attribute
    monkeypatch.setattr(tail, "attribute", lambda rows: calls.append(1) or real(rows))
    analysis = analyse(points)
    render.markdown(analysis, {})
    sweep_json.to_record(analysis)
    render.attributions(analysis)
    assert len(calls) == 1
