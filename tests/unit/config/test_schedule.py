"""The lookahead schedule's rules agree with vLLM's own validator, case by case."""

from __future__ import annotations

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.config.schedule import gaps, max_k, schedule_problems
from llama4spec.config.validate import validate
from llama4spec.engine.args import speculative_config

CASES = [
    [[1, 1, 3], [2, 16, 1]],
    [[1, 4, 3], [5, 32, 2], [33, 128, 0]],
    [[1, 16, 3], [32, 128, 2]],  # a gap: 17-31 carry k=3 forward
    [[5, 32, 2], [1, 4, 3]],  # unsorted: vLLM sorts
    [[2, 4, 3]],  # does not start at 1
    [[1, 4, 3], [4, 8, 1]],  # overlap
    [[0, 4, 3]],  # not positive
    [[1, 4, -1]],  # negative k
    [[4, 1, 3]],  # first > last
    [[1, 4]],  # not three numbers
    [],
    [[1, 2, 0]],  # k=0: no speculation at that batch size
]


@pytest.mark.parametrize("schedule", CASES, ids=[str(c) for c in CASES])
def test_rules_agree_with_vllm(schedule) -> None:
    from vllm.v1.spec_decode.dynamic.utils import validate_and_normalize_dynamic_sd_schedule

    try:
        validate_and_normalize_dynamic_sd_schedule(schedule)
        vllm_ok = True
    except ValueError:
        vllm_ok = False
    assert (schedule_problems(schedule, lookahead=8) == []) == vllm_ok, schedule_problems(schedule, 8)


def test_a_k_above_lookahead_is_refused_not_clamped() -> None:
    (problem,) = schedule_problems([[1, 4, 5]], lookahead=3)
    assert "above lookahead=3" in problem and "silently" in problem


def test_gaps_and_largest_k() -> None:
    assert gaps([[1, 16, 3], [32, 128, 2]]) == [(17, 31, 3)]
    assert max_k([[1, 1, 3], [2, 16, 1]], 5) == 3 and max_k(None, 5) == 5


def test_schedule_reaches_the_speculative_config_and_validate() -> None:
    cfg = compose_config(["draft.lookahead_schedule=[[1,1,3],[2,16,1]]"]).cfg
    assert speculative_config(cfg)["num_speculative_tokens_per_batch_size"] == [[1, 1, 3], [2, 16, 1]]
    assert validate(cfg) == []
    bad = compose_config(["draft.lookahead_schedule=[[2,4,5],[3,8,1]]"]).cfg
    assert len([p for p in validate(bad) if "lookahead_schedule" in p]) == 3  # every problem at once
    assert any("needs a draft" in p for p in validate(compose_config(["draft=none", "draft.lookahead_schedule=[[1,4,3]]"]).cfg))
