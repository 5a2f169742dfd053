"""Co-location from the groups' job.json: same node and overlapping spans; what a report warns of."""

from __future__ import annotations

from llama4spec.runbook.colocation import Span, colocated, mixed, span


def test_overlap_on_one_node_is_co_location_touching_spans_and_other_nodes_are_not() -> None:
    spans = [Span("a", "n1", 0, 10), Span("b", "n1", 5, 15), Span("c", "n1", 15, 20), Span("d", "n2", 0, 20)]
    assert colocated(spans) == {"a": ("b",), "b": ("a",), "c": (), "d": ()}


def test_a_job_record_without_node_or_times_or_with_bad_ones_has_no_span() -> None:
    good = {"node": "n1", "started": "2026-12-01T10:00:00+0000", "finished": "2026-12-01T10:05:00+0000"}
    assert span("g", good) == Span("g", "n1", span("g", good).start, span("g", good).start + 300)
    for bad in ({**good, "node": ""}, {**good, "started": None}, {**good, "finished": "yesterday"},
                {**good, "finished": "2026-12-01T09:00:00+0000"}, {**good, "node": 5}):
        assert span("g", bad) is None


def test_a_warning_names_each_point_with_what_ran_beside_it() -> None:
    (line,) = mixed({1: {"none-c1": ("k1",), "k1-c1": ("none",), "k3-c1": ()}, 4: {"none-c4": (), "k3-c4": ()}})
    assert line.startswith("concurrency 1: ") and "none-c1 beside k1" in line and "k3-c1 alone" in line
