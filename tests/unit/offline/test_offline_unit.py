"""Offline pieces that need no engine: output comparison, the no-draft config, the tables."""

from __future__ import annotations

from rich.console import Console

from llama4spec.offline import display as report
from llama4spec.config.compose import compose_config
from llama4spec.results.acceptance import AcceptanceCounters, RunStats
from llama4spec.offline.run import without_draft
from llama4spec.offline.stats import first_difference


def test_first_difference():
    assert first_difference([[1, 2, 3], [4, 5]], [[1, 2, 3], [4, 5]]) is None
    assert first_difference([[1, 2, 3], [4, 5]], [[1, 2, 3], [4, 6]]) == (1, 1)
    assert first_difference([[1, 2, 3]], [[1, 2]]) == (0, 2)


def test_without_draft_keeps_everything_else():
    cfg = compose_config(["lookahead=5", "memory.max_num_seqs=8"]).cfg
    base = without_draft(cfg)
    assert base.draft.method is None and base.draft.model is None
    assert base.memory == cfg.memory and base.target == cfg.target and cfg.draft.method == "eagle"


def _render(stats: RunStats) -> str:
    console = Console(record=True, width=100)
    report.offline_stats(console, stats, "label")
    return console.export_text()


def test_tables_show_acceptance_only_with_a_draft():
    with_draft = _render(RunStats(120, AcceptanceCounters(10, 30, 24, [10, 8, 6]), k=3, wall_time_s=1.0))
    assert "acceptance by draft position" in with_draft and "mean acceptance length" in with_draft
    assert "0.800" in with_draft and "0.600" in with_draft
    without = _render(RunStats(120, None, None, wall_time_s=1.0))
    assert "acceptance" not in without and "120" in without


def test_a_batch_of_temperatures_gives_each_request_its_own_seed():
    from llama4spec.offline.run import batch_requests

    cfg = compose_config(["offline.temperatures=[0,0.6,1.0]", "generation.seed=7"]).cfg
    requests = batch_requests(cfg, 2)
    assert [(r.prompt, r.temperature) for r in requests] == [(0, 0.0), (1, 0.0), (0, 0.6), (1, 0.6), (0, 1.0), (1, 1.0)]
    assert [r.seed for r in requests] == list(range(7, 13))


def test_without_a_list_of_temperatures_every_request_still_gets_its_own_seed():
    from llama4spec.offline.run import batch_requests, request_seed

    plain = batch_requests(compose_config(["generation.temperature=0.8", "generation.seed=5"]).cfg, 3)
    assert [(r.prompt, r.temperature, r.seed) for r in plain] == [(0, 0.8, 5), (1, 0.8, 6), (2, 0.8, 7)]
    assert len({request_seed(0, n) for n in range(100)}) == 100  # no two requests of a batch share a seed
    greedy = batch_requests(compose_config([]).cfg, 2)
    assert [r.temperature for r in greedy] == [0.0, 0.0]


def test_per_request_steps_add_up_as_vllm_counts_them():
    from llama4spec.results.acceptance import RequestSteps, total

    a = RequestSteps([3, 1, 0, 2], [3, 3, 3, 2])
    c = a.counters()
    assert (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens, c.accepted_per_pos) == (4, 11, 6, [3, 2, 1])
    cut = a.counters(drop_last=True)
    assert (cut.num_drafts, cut.accepted_per_pos) == (3, [2, 1, 1])
    both = total([c, RequestSteps([1], [3]).counters()])
    assert both.num_drafts == 5 and both.accepted_per_pos == [4, 2, 1]
    assert RequestSteps.from_vllm(None).counters().num_drafts == 0


def test_the_temperature_table_has_a_row_per_temperature():
    from llama4spec.results.acceptance import RequestSteps
    from llama4spec.results.offline_record import TemperatureRun

    runs = [TemperatureRun(t, RunStats(10, AcceptanceCounters(10, 30, n, [n // 3] * 3), k=3), [0], [RequestSteps([], [])])
            for t, n in ((0.0, 30), (1.0, 15))]
    console = Console(record=True, width=120)
    report.by_temperature(console, runs, 3, False)
    text = console.export_text()
    assert "acceptance by temperature" in text and "4.000" in text and "2.500" in text
    assert "do not add up" in text


def test_the_spread_pair_brings_its_exact_rates_and_no_other_pair_does():
    from llama4spec.offline.stats import exact_rates
    from llama4spec.tiny import spread

    cfg = compose_config(["target=tiny_spread", "lookahead=2"]).cfg
    assert exact_rates(cfg, 1.0) == spread.expected_rates(1.0, 2)
    probabilistic = compose_config(["target=tiny_spread", "draft.sample_method=probabilistic"]).cfg
    assert exact_rates(probabilistic, 1.0) == spread.expected_rates(1.0, 3, "probabilistic")
    assert exact_rates(compose_config([]).cfg, 1.0) is None  # the plain tiny pair
    assert exact_rates(compose_config(["target=tiny_spread", "draft=tiny_eagle"]).cfg, 1.0) is None
