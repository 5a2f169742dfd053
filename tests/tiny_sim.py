"""Greedy EAGLE verification on the tiny pair, simulated from the successor maps: the counters vLLM
0.32 keeps, predicted exactly.

How vLLM 0.32 counts (read in vllm/v1/core/sched/scheduler.py):

* The prefill step samples the first output token; the drafter then proposes k tokens, and every
  later step verifies the k drafts of the step before (one "draft", k "draft tokens").
* Nothing shortens the drafts as max_tokens approaches: the scheduler schedules every proposed
  spec token (it trims them only for max_model_len, and under async scheduling skips a step only
  when the previous one certainly reached max_tokens, which a verification step that still has
  tokens to produce never does). ``make_spec_decoding_stats`` counts the drafts and the accepted
  tokens of the last step before the output is cut to max_tokens. So the last step of a request
  counts k draft tokens and every draft the target agrees with, even those past max_tokens.
* A request ends at the first step after which it holds max_tokens or more tokens.

So the simulation below is exact for greedy decoding with a fixed k (no lookahead schedule), no
EOS (the tiny target never produces one) and prompts far below max_model_len.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from llama4spec.tiny.prompts import last_token
from llama4spec.tiny.weights import draft_successor
from llama4spec.tiny.words import successor

Next = Callable[[int], int]


def perfect(i: int) -> int:
    return draft_successor(i, imperfect=False)


def imperfect(i: int) -> int:
    return draft_successor(i, imperfect=True)


@dataclass
class Counts:
    """The spec-decode counters of a set of requests, as vLLM keeps them."""

    num_drafts: int = 0
    num_draft_tokens: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)
    output_tokens: int = 0

    @property
    def num_accepted_tokens(self) -> int:
        return sum(self.accepted_per_pos)

    def __add__(self, other: "Counts") -> "Counts":
        width = max(len(self.accepted_per_pos), len(other.accepted_per_pos))
        a = self.accepted_per_pos + [0] * (width - len(self.accepted_per_pos))
        b = other.accepted_per_pos + [0] * (width - len(other.accepted_per_pos))
        return Counts(self.num_drafts + other.num_drafts, self.num_draft_tokens + other.num_draft_tokens,
                      [x + y for x, y in zip(a, b)], self.output_tokens + other.output_tokens)

    def record(self) -> dict:
        """The raw counters in ``AcceptanceCounters.to_record``'s names."""
        return {"num_drafts": self.num_drafts, "num_draft_tokens": self.num_draft_tokens,
                "num_accepted_tokens": self.num_accepted_tokens, "accepted_per_pos": list(self.accepted_per_pos)}


def simulate(last_token_id: int, max_tokens: int, k: int, draft_next: Next) -> tuple[int, list[int]]:
    """Greedy EAGLE on the tiny pair after a prompt ending in ``last_token_id``: (verification
    steps, accepted count per position), counted as vLLM counts them (the last step in full)."""
    out = [successor(last_token_id)]  # the prefill step's token
    steps, per_pos = 0, [0] * k
    while len(out) < max_tokens:
        proposals, x = [], out[-1]
        for _ in range(k):
            x = draft_next(x)
            proposals.append(x)
        accepted, x = 0, out[-1]
        while accepted < k and proposals[accepted] == successor(x):
            x = proposals[accepted]
            accepted += 1
        steps += 1
        for j in range(accepted):
            per_pos[j] += 1
        for _ in range(accepted + 1):  # accepted drafts plus the target's own token
            out.append(successor(out[-1]))
    return steps, per_pos


def predict(prompts: Iterable[str], max_tokens: int, k: int, draft_next: Next) -> Counts:
    """The counters vLLM reports for greedy generation of ``prompts`` (the tiny pair's word chains)."""
    total = Counts(accepted_per_pos=[0] * k)
    for prompt in prompts:
        steps, per_pos = simulate(last_token(prompt), max_tokens, k, draft_next)
        total = total + Counts(steps, k * steps, per_pos, max_tokens)
    return total


def expected_counts(prompts: Iterable[str], max_tokens: int, k: int, draft_next: Next) -> tuple[int, list[int]]:
    """(verification steps, accepted per position) over ``prompts``."""
    c = predict(prompts, max_tokens, k, draft_next)
    return c.num_drafts, c.accepted_per_pos
