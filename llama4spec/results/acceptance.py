"""Acceptance statistics from vLLM's own counters: offline ``get_metrics()`` or serving ``/metrics``.

Nothing here estimates: every figure is a counter vLLM keeps, or a ratio of two of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from llama4spec.files import count, number

DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"


@dataclass
class AcceptanceCounters:
    """Raw speculative decoding counters (cumulative, summed over engines)."""

    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)
    # Steps that drafted at least i + 1 tokens, per position i: from vLLM's per-request per-step arrays
    # (``RequestSteps``), since vLLM keeps no such counter; None where those arrays were not read.
    drafted_per_pos: list[int] | None = field(default=None, compare=False)

    def __sub__(self, before: "AcceptanceCounters") -> "AcceptanceCounters":
        width = max(len(self.accepted_per_pos), len(before.accepted_per_pos))
        after_pos = self.accepted_per_pos + [0] * (width - len(self.accepted_per_pos))
        before_pos = before.accepted_per_pos + [0] * (width - len(before.accepted_per_pos))
        return AcceptanceCounters(
            self.num_drafts - before.num_drafts,
            self.num_draft_tokens - before.num_draft_tokens,
            self.num_accepted_tokens - before.num_accepted_tokens,
            [a - b for a, b in zip(after_pos, before_pos)],
        )

    def __add__(self, other: "AcceptanceCounters") -> "AcceptanceCounters":
        width = max(len(self.accepted_per_pos), len(other.accepted_per_pos))
        mine = self.accepted_per_pos + [0] * (width - len(self.accepted_per_pos))
        theirs = other.accepted_per_pos + [0] * (width - len(other.accepted_per_pos))
        return AcceptanceCounters(
            self.num_drafts + other.num_drafts,
            self.num_draft_tokens + other.num_draft_tokens,
            self.num_accepted_tokens + other.num_accepted_tokens,
            [a + b for a, b in zip(mine, theirs)],
            _sum_drafted(self, other),
        )

    @property
    def mean_acceptance_length(self) -> float | None:
        """Tokens per verification step: 1 (the target's own) + accepted drafts per step."""
        return 1 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else None

    @property
    def draft_tokens_per_draft(self) -> float | None:
        """Speculative tokens per verification step: k, or less under a lookahead schedule."""
        return self.num_draft_tokens / self.num_drafts if self.num_drafts else None

    @property
    def acceptance_rate(self) -> float | None:
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens else None

    def rate_per_position(self, k: int | None = None) -> list[float]:
        counts = list(self.accepted_per_pos)
        if k is not None:
            counts = (counts + [0] * k)[:k]
        return [c / self.num_drafts if self.num_drafts else 0.0 for c in counts]

    def rate_per_drafted_position(self, k: int | None = None) -> list[float | None] | None:
        """Acceptance at position i over the steps that drafted position i (at least i + 1 tokens):
        the rate at each position where draft lengths vary (n-gram, suffix, a lookahead schedule), which
        vLLM's own figure (``rate_per_position``: over every step) understates. None without
        ``drafted_per_pos``; None at a position no step drafted."""
        if self.drafted_per_pos is None:
            return None
        width = k if k is not None else max(len(self.accepted_per_pos), len(self.drafted_per_pos))
        acc = (list(self.accepted_per_pos) + [0] * width)[:width]
        drafted = (list(self.drafted_per_pos) + [0] * width)[:width]
        return [a / d if d else None for a, d in zip(acc, drafted)]

    @property
    def lengths_vary(self) -> bool:
        """Some step drafted fewer tokens than another (known only from the per-step arrays)."""
        return bool(self.drafted_per_pos) and len(set(self.drafted_per_pos)) > 1

    def to_record(self, k: int | None = None) -> dict[str, Any]:
        """The one serialised shape of acceptance counters (offline and served records alike):
        the raw counters, then the figures derived from them (with the per-step arrays read: the
        steps that drafted each position and the rate over them)."""
        extra: dict[str, Any] = {}
        if self.drafted_per_pos is not None:
            extra = {"drafted_per_pos": list(self.drafted_per_pos),
                     "acceptance_rate_per_drafted_position": self.rate_per_drafted_position(k)}
        return {
            "num_drafts": self.num_drafts,
            "num_draft_tokens": self.num_draft_tokens,
            "num_accepted_tokens": self.num_accepted_tokens,
            "accepted_per_pos": list(self.accepted_per_pos),
            "draft_tokens_per_draft": self.draft_tokens_per_draft,
            "mean_acceptance_length": self.mean_acceptance_length,
            "acceptance_rate": self.acceptance_rate,
            "acceptance_rate_per_position": self.rate_per_position(k),
            **extra,
        }


def _sum_drafted(a: AcceptanceCounters, b: AcceptanceCounters) -> list[int] | None:
    """The sum of two ``drafted_per_pos`` (counters of no step count as none); None when one is unknown."""
    lists = [c.drafted_per_pos if c.drafted_per_pos is not None or c.num_drafts else [] for c in (a, b)]
    if any(x is None for x in lists):
        return None
    x, y = lists
    width = max(len(x), len(y))
    return [p + q for p, q in zip(x + [0] * (width - len(x)), y + [0] * (width - len(y)))]


def _count(value: Any) -> bool:
    """A counter read back: a whole number, 0 or more."""
    return count(value) is not None


def from_offline_metrics(metrics: Iterable[Any]) -> AcceptanceCounters:
    """Sum vLLM's ``LLM.get_metrics()`` spec-decode counters over every engine."""
    c = AcceptanceCounters()
    for m in metrics:
        if m.name == DRAFTS:
            c.num_drafts += int(m.value)
        elif m.name == DRAFT_TOKENS:
            c.num_draft_tokens += int(m.value)
        elif m.name == ACCEPTED:
            c.num_accepted_tokens += int(m.value)
        elif m.name == PER_POS:
            values = [int(v) for v in m.values]
            width = max(len(values), len(c.accepted_per_pos))
            a = c.accepted_per_pos + [0] * (width - len(c.accepted_per_pos))
            c.accepted_per_pos = [x + y for x, y in zip(a, values + [0] * (width - len(values)))]
    return c


def from_prometheus_text(text: str) -> AcceptanceCounters:
    """Parse a server's ``/metrics`` page (Prometheus text format), summed over engines."""
    from prometheus_client.parser import text_string_to_metric_families

    c = AcceptanceCounters()
    per_pos: dict[int, int] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name.removesuffix("_total")
            if name == DRAFTS:
                c.num_drafts += int(sample.value)
            elif name == DRAFT_TOKENS:
                c.num_draft_tokens += int(sample.value)
            elif name == ACCEPTED:
                c.num_accepted_tokens += int(sample.value)
            elif name == PER_POS and "position" in sample.labels:
                pos = int(sample.labels["position"])
                per_pos[pos] = per_pos.get(pos, 0) + int(sample.value)
    c.accepted_per_pos = [per_pos.get(i, 0) for i in range(max(per_pos) + 1)] if per_pos else []
    return c


@dataclass
class RequestSteps:
    """One request's verify steps as vLLM's per-request counters keep them
    (``per_request_spec_decode_metrics='detailed'``): accepted and drafted tokens per step, in order."""

    accepted: list[int]
    drafted: list[int]

    def counters(self, drop_last: bool = False) -> AcceptanceCounters:
        """The aggregate counters these steps add up to, as vLLM counts them (position i counts a step
        whose first i+1 drafted tokens were accepted). ``drop_last``: without the final step, which a
        request's ``max_tokens`` may cut short."""
        steps = list(zip(self.accepted, self.drafted))[: -1 if drop_last else None]
        width = max((d for _, d in steps), default=0)
        return AcceptanceCounters(len(steps), sum(d for _, d in steps), sum(a for a, _ in steps),
                                  [sum(1 for a, _ in steps if a > i) for i in range(width)],
                                  [sum(1 for _, d in steps if d > i) for i in range(width)])

    def to_record(self) -> dict[str, list[int]]:
        return {"per_step_accepted": list(self.accepted), "per_step_drafted": list(self.drafted)}

    @classmethod
    def from_vllm(cls, metrics: Any) -> "RequestSteps":
        """From a finished request's ``CompletionOutput.spec_decode_metrics`` (None: no verify step)."""
        if metrics is None:
            return cls([], [])
        return cls([int(a) for a in metrics.per_step_accepted], [int(d) for d in metrics.per_step_drafted])


def total(counters: Iterable[AcceptanceCounters]) -> AcceptanceCounters:
    return sum(counters, AcceptanceCounters())


def with_drafted(counters: AcceptanceCounters, steps: Iterable[RequestSteps]) -> AcceptanceCounters:
    """``counters`` (vLLM's aggregate ones) with the steps that drafted each position, counted from the
    same requests' per-step arrays, when those arrays add up to exactly these counters (else unchanged:
    a denominator from other steps than the numerator's would mislead)."""
    mine = total(r.counters() for r in steps)
    if mine != counters:
        return counters
    return AcceptanceCounters(counters.num_drafts, counters.num_draft_tokens, counters.num_accepted_tokens,
                              list(counters.accepted_per_pos), list(mine.drafted_per_pos or []))


@dataclass
class RunStats:
    """What a run reports: output tokens plus acceptance (None without a draft)."""

    total_num_output_tokens: int
    counters: AcceptanceCounters | None
    k: int | None  # number of speculative tokens (the most a step drafts)
    wall_time_s: float | None = None
    scheduled: bool = False  # a lookahead schedule picked k per batch size

    @property
    def output_tokens_per_s(self) -> float | None:
        if not self.wall_time_s:
            return None
        return self.total_num_output_tokens / self.wall_time_s

    def to_record(self) -> dict[str, Any]:
        """The ``stats`` object of an offline record: output tokens and the acceptance record
        (``AcceptanceCounters.to_record``'s shape, None without a draft)."""
        return {
            "total_num_output_tokens": self.total_num_output_tokens,
            "acceptance": self.counters.to_record(self.k) if self.counters else None,
        }
