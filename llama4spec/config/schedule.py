"""A lookahead schedule (vLLM's ``num_speculative_tokens_per_batch_size``): its rules, pure.

The rules are vLLM 0.32's own (``vllm/v1/spec_decode/dynamic/utils.py``): a list of
``[first, last, k]`` inclusive batch-size ranges, positive, non-overlapping once sorted, the
first starting at 1, every k at least 0. vLLM silently clamps every k to
``num_speculative_tokens``, so a k above ``lookahead`` is refused here instead. Gaps between
ranges, and batch sizes after the last one, carry the previous k forward.
"""

from __future__ import annotations

from typing import Any


def schedule_problems(schedule: Any, lookahead: int, key: str = "draft.lookahead_schedule") -> list[str]:
    """Every problem with ``schedule``, one line each (empty when vLLM would take it as meant)."""
    example = f"e.g. {key}=[[1,4,3],[5,32,1]]"
    if not isinstance(schedule, (list, tuple)) or not schedule:
        return [f"{key} must be a non-empty list of [first, last, k] ranges; {example}"]
    problems: list[str] = []
    ranges: list[tuple[int, int, int]] = []
    for i, entry in enumerate(schedule):
        if (not isinstance(entry, (list, tuple)) or len(entry) != 3
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in entry)):
            problems.append(f"{key}[{i}]={list(entry) if isinstance(entry, (list, tuple)) else entry!r}: "
                            f"each range is [first, last, k], three whole numbers; {example}")
            continue
        first, last, k = entry
        if first <= 0 or last <= 0:
            problems.append(f"{key}[{i}]={list(entry)}: batch sizes must be positive")
        elif first > last:
            problems.append(f"{key}[{i}]={list(entry)}: first must be <= last")
        if k < 0:
            problems.append(f"{key}[{i}]={list(entry)}: k must be 0 or more")
        elif k > lookahead:
            problems.append(f"{key}[{i}]={list(entry)}: k={k} is above lookahead={lookahead}, and vLLM would "
                            f"silently use {lookahead}; raise lookahead to {k} or lower this k")
        ranges.append((first, last, k))
    if len(ranges) != len(schedule) or any(r[0] <= 0 or r[1] <= 0 or r[0] > r[1] for r in ranges):
        return problems  # the order can't be judged on malformed ranges
    ordered = sorted(ranges)
    previous_end = 0
    for first, last, _ in ordered:
        if first <= previous_end:
            problems.append(f"{key}: ranges overlap at batch size {first}; each batch size may fall in one range")
            break
        previous_end = last
    if ordered[0][0] != 1:
        problems.append(f"{key}: the first range starts at {ordered[0][0]}; it must start at 1 so every batch "
                        f"size has a k")
    return problems


def gaps(schedule: list[list[int]]) -> list[tuple[int, int, int]]:
    """Batch-size gaps between ranges as (first, last, k carried forward), for a note."""
    ordered = sorted(tuple(r) for r in schedule)
    out = []
    for (_, end, k), (start, _, _) in zip(ordered, ordered[1:]):
        if start > end + 1:
            out.append((end + 1, start - 1, k))
    return out


def max_k(schedule: list[list[int]] | None, lookahead: int) -> int:
    """The most speculative tokens a step can verify under the schedule."""
    return min(lookahead, max(r[2] for r in schedule)) if schedule else lookahead
