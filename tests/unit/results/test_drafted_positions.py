"""Per-position acceptance over the steps that drafted each position (``results.acceptance``), beside
vLLM's own figure over every step; and the async-scheduling pin of a comparison (``config.methods``)."""

from __future__ import annotations

import pytest

from llama4spec.config import methods
from llama4spec.results.acceptance import AcceptanceCounters, RequestSteps, total, with_drafted


def test_the_rate_at_a_position_divides_by_the_steps_that_drafted_it() -> None:
    # two requests: steps drafting 3, 3, 1, 2 tokens and 2, 1 tokens
    steps = [RequestSteps([3, 1, 0, 2], [3, 3, 1, 2]), RequestSteps([0, 1], [2, 1])]
    counted = total(s.counters() for s in steps)
    assert counted.accepted_per_pos == [4, 2, 1] and counted.drafted_per_pos == [6, 4, 2]
    assert counted.rate_per_position(3) == pytest.approx([4 / 6, 2 / 6, 1 / 6])  # vLLM's: over every step
    assert counted.rate_per_drafted_position(3) == pytest.approx([4 / 6, 2 / 4, 1 / 2])
    assert counted.lengths_vary
    record = counted.to_record(3)
    assert record["drafted_per_pos"] == [6, 4, 2]
    assert record["acceptance_rate_per_drafted_position"] == pytest.approx([4 / 6, 0.5, 0.5])
    from tests.unit.results.test_metrics import _read_back

    assert _read_back(record).drafted_per_pos == [6, 4, 2]


def test_vllms_counters_take_the_denominator_only_from_the_same_steps() -> None:
    steps = [RequestSteps([2, 0], [2, 1])]
    aggregate = AcceptanceCounters(2, 3, 2, [1, 1])
    assert with_drafted(aggregate, steps).drafted_per_pos == [2, 1]
    other = AcceptanceCounters(3, 5, 2, [1, 1])  # counters of other steps than the arrays': left alone
    assert with_drafted(other, steps).drafted_per_pos is None
    assert with_drafted(other, steps).to_record(2).keys() == other.to_record(2).keys()
    assert "drafted_per_pos" not in other.to_record(2)


def test_fixed_lengths_give_both_figures_alike() -> None:
    c = total(s.counters() for s in [RequestSteps([3, 1], [3, 3])])
    assert not c.lengths_vary and c.rate_per_drafted_position(3) == c.rate_per_position(3)
    assert c.rate_per_drafted_position(4)[3] is None  # no step drafted a fourth token


def test_a_comparison_pins_async_scheduling_off_where_one_method_forces_it() -> None:
    assert methods.pinned_async_scheduling(["ngram", None]) is False
    assert methods.pinned_async_scheduling(["suffix", "eagle"]) is False
    assert methods.pinned_async_scheduling(["eagle", None]) is None
    assert methods.pinned_async_scheduling(["draft_model", "eagle3", None]) is None


def test_offline_baseline_pins_both_sides(tiny_dir) -> None:
    from llama4spec.config.compose import compose_config
    from llama4spec.engine.args import llm_kwargs
    from llama4spec.offline.run import compared

    spec, base, note = compared(compose_config(["draft=ngram", "offline.baseline=true"]).cfg)
    assert llm_kwargs(spec)["async_scheduling"] is False and llm_kwargs(base)["async_scheduling"] is False
    assert "pinned off on both sides" in note and "n-gram" in note
    spec, base, note = compared(compose_config(["offline.baseline=true"]).cfg)  # EAGLE: left to vLLM (on)
    assert note is None and "async_scheduling" not in llm_kwargs(spec) and "async_scheduling" not in llm_kwargs(base)
    spec, base, note = compared(compose_config(["draft=ngram", "serve.async_scheduling=true"]).cfg)
    assert note is None and llm_kwargs(base)["async_scheduling"] is True  # the user's choice stands


def test_a_served_request_gives_the_steps_that_drafted_each_position() -> None:
    """vLLM's response block at the "detailed" level (ordered per-step arrays) gives each position's
    denominator; the run's ``/metrics`` delta takes it when the rows add up to that delta."""
    from llama4spec.results.requests import row_of, with_drafted

    block = {"acceptance_histogram": [1, 1, 0, 1], "num_spec_steps": 3, "num_draft_tokens": 6,
             "num_accepted_draft_tokens": 4, "per_step_accepted": [3, 0, 1], "per_step_drafted": [3, 1, 2]}
    row = row_of({"id": "r-0", "ok": True, "spec": block}, "r-", {}, None)
    assert row.accepted_per_pos == [2, 1, 1] and row.drafted_per_pos == [3, 2, 1]
    summary = row_of({"id": "r-1", "ok": True, "spec": {k: v for k, v in block.items() if not k.startswith("per_")}},
                     "r-", {}, None)
    assert summary.drafted_per_pos is None  # the "summary" level: no denominator
    delta = AcceptanceCounters(3, 6, 4, [2, 1, 1])
    shown = with_drafted(delta, [row])
    assert shown.rate_per_drafted_position(3) == pytest.approx([2 / 3, 1 / 2, 1.0])
    assert with_drafted(delta, [row, summary]).drafted_per_pos is None  # the rows no longer add up to it


def test_the_server_keeps_per_step_arrays_where_draft_lengths_vary(tiny_dir) -> None:
    from llama4spec.config.compose import compose_config
    from llama4spec.engine.args import serve_flags

    def level(*overrides: str) -> str:
        flags = serve_flags(compose_config(list(overrides)).cfg)
        return flags[flags.index("--per-request-spec-decode-metrics") + 1]

    assert level("draft=ngram") == "detailed" and level("draft=tiny_eagle") == "summary"
    assert level("draft.lookahead_schedule=[[1,1,3],[2,16,1]]") == "detailed"


def test_a_servers_async_scheduling_is_read_from_its_flags_and_log() -> None:
    from llama4spec.serving.watch import async_scheduling

    started = "INFO ... Initializing a V1 LLM engine (v0.32.0) with config: model='t'\n"
    off = "WARNING ... Async scheduling not supported with ngram-based speculative decoding and will be disabled.\n"
    assert async_scheduling(off + started, ["--model", "t"]) is False
    assert async_scheduling(started, ["--model", "t"]) is True  # vLLM's default, nothing said
    assert async_scheduling(started, ["--no-async-scheduling"]) is False
    assert async_scheduling(off + started, ["--async-scheduling"]) is True
    assert async_scheduling("", []) is None  # not started yet: unknown
