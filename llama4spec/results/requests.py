"""Per-request records of a served benchmark: each request's acceptance beside its latencies.

vLLM's server returns one request's speculative counters in its response
(``metrics.speculative_decoding``, with ``--per-request-spec-decode-metrics``); the benchmark
worker keeps them with the request's timings (``serving.vllm_bench``). A ``RequestRow`` is one
request; ``check`` compares the sums over a run's requests with the server's ``/metrics`` deltas
around that run (equal when no request failed and nothing else reached the server).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping

from llama4spec.files import count, number
from llama4spec.results.acceptance import AcceptanceCounters

MAX_ID = 200  # a request id: a prefix and an index
MAX_POSITIONS = 64  # speculative positions a request may report (vLLM's k)
MAX_REQUESTS = 200_000  # requests one run may keep


@dataclass
class RequestRow:
    """One request of one benchmark run."""

    id: str
    ok: bool
    index: int | None = None  # the request's index in the benchmark's dataset (its id without the prefix)
    category: str | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None  # vLLM's definition: (E2E - TTFT) / (output tokens - 1)
    e2e_ms: float | None = None
    queue_ms: float | None = None  # waiting for the client's concurrency cap, before it was sent
    arrival_ms: float | None = None  # when it was due, after the run's first request was
    output_tokens: int = 0
    drafts: int | None = None  # verification steps (None: the response carried no speculative counters)
    draft_tokens: int | None = None
    accepted: int | None = None
    accepted_per_pos: list[int] = field(default_factory=list)
    prompt_sha256: str | None = None
    drafted_per_pos: list[int] | None = None  # steps that drafted position i (from vLLM's per-step arrays)

    @property
    def acceptance_length(self) -> float | None:
        """Tokens per verification step: 1 + accepted drafts per step (None: no step)."""
        return 1 + self.accepted / self.drafts if self.drafts and self.accepted is not None else None

    def counters(self) -> AcceptanceCounters | None:
        if self.drafts is None:
            return None
        return AcceptanceCounters(self.drafts, self.draft_tokens or 0, self.accepted or 0, list(self.accepted_per_pos),
                                  None if self.drafted_per_pos is None else list(self.drafted_per_pos))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["acceptance_length"] = self.acceptance_length
        return out


COLUMNS = ("run", "id", "index", "category", "ok", "output_tokens", "drafts", "draft_tokens", "accepted",
           "acceptance_length", "accepted_per_pos", "ttft_ms", "tpot_ms", "e2e_ms", "queue_ms", "arrival_ms")


def _number(value: Any) -> float | None:
    return number(value, 0)


def _count(value: Any) -> int | None:
    return count(value)


def _ms(seconds: Any) -> float | None:
    value = _number(seconds)
    return None if value is None else value * 1000.0


def _spec(block: Any) -> tuple[int, int, int, list[int]] | None:
    """(steps, drafted, accepted, accepted per position) of vLLM's ``speculative_decoding`` block:
    position i counts the steps that accepted more than i drafts, as vLLM's ``/metrics`` counts."""
    if not isinstance(block, Mapping):
        return None
    histogram = block.get("acceptance_histogram")
    steps, drafted, accepted = (_count(block.get(k)) for k in ("num_spec_steps", "num_draft_tokens",
                                                               "num_accepted_draft_tokens"))
    if (not isinstance(histogram, list) or not 0 < len(histogram) <= MAX_POSITIONS + 1
            or any(_count(h) is None for h in histogram) or None in (steps, drafted, accepted)):
        return None
    if sum(histogram) != steps or sum(j * h for j, h in enumerate(histogram)) != accepted:
        return None
    per_pos = [sum(histogram[i + 1:]) for i in range(len(histogram) - 1)]
    return steps, drafted, accepted, per_pos


def _drafted(block: Any, steps: int, drafted: int, width: int) -> list[int] | None:
    """Steps that drafted position i, from the block's per-step arrays (the "detailed" level), when
    they agree with its totals; None without them."""
    if not isinstance(block, Mapping):
        return None
    per_step = block.get("per_step_drafted")
    if not (isinstance(per_step, list) and len(per_step) == steps and all(_count(d) is not None for d in per_step)
            and sum(per_step) == drafted and max(per_step, default=0) <= MAX_POSITIONS):
        return None
    return [sum(1 for d in per_step if d > i) for i in range(max(width, max(per_step, default=0)))]


def _due_s(item: Mapping[str, Any]) -> float | None:
    """When a request the worker wrote was due (its start less its wait), on the client's clock."""
    start, queue = item.get("start_s"), _number(item.get("queue_s"))
    start = number(start)
    return None if start is None else start - (queue or 0.0)


def row_of(item: Mapping[str, Any], prefix: str, categories: Mapping[str, str], category: str | None,
           first_s: float | None = None) -> RequestRow | None:
    """A row from one request the worker wrote (None: not one). ``category``: every request's (a
    category point), else ``categories``: prompt SHA-256 -> category."""
    rid, ok = item.get("id"), item.get("ok")
    if not (isinstance(rid, str) and 0 < len(rid) <= MAX_ID and rid.isprintable()) or not isinstance(ok, bool):
        return None
    tail = rid[len(prefix):] if prefix and rid.startswith(prefix) else ""
    sha = item.get("prompt_sha256") if isinstance(item.get("prompt_sha256"), str) else None
    ttft, e2e = _ms(item.get("ttft_s")), _ms(item.get("latency_s"))
    tokens = _count(item.get("output_tokens")) or 0
    tpot = (e2e - ttft) / (tokens - 1) if ok and ttft is not None and e2e is not None and tokens > 1 else None
    spec = _spec(item.get("spec"))
    drafted = _drafted(item.get("spec"), spec[0], spec[1], len(spec[3])) if spec else None
    due = _due_s(item)
    return RequestRow(
        id=rid, ok=ok, index=int(tail) if tail.isdigit() and len(tail) < 10 else None,
        category=category or (categories.get(sha) if sha else None),
        ttft_ms=ttft if ok else None, tpot_ms=tpot, e2e_ms=e2e if ok else None, queue_ms=_ms(item.get("queue_s")),
        arrival_ms=_ms(due - first_s) if due is not None and first_s is not None else None, output_tokens=tokens, drafts=spec[0] if spec else None, draft_tokens=spec[1] if spec else None,
        accepted=spec[2] if spec else None, accepted_per_pos=spec[3] if spec else [], prompt_sha256=sha,
        drafted_per_pos=drafted)


def rows_of(data: Any, categories: Mapping[str, str] | None = None, category: str | None = None) -> list[RequestRow] | None:
    """The rows of a worker's ``<result>.requests.json`` (None: not such a file), in index order."""
    if not isinstance(data, Mapping) or not isinstance(data.get("requests"), list):
        return None
    prefix = data.get("request_id_prefix") if isinstance(data.get("request_id_prefix"), str) else ""
    items = [item for item in data["requests"][:MAX_REQUESTS] if isinstance(item, Mapping)]
    first = min((d for d in map(_due_s, items) if d is not None), default=None)
    rows = [row_of(item, prefix, categories or {}, category, first) for item in items]
    return sorted((r for r in rows if r is not None), key=lambda r: (r.index is None, r.index or 0, r.id))



def sums(rows: Iterable[RequestRow]) -> AcceptanceCounters:
    """The counters of ``rows`` added up (requests without counters add nothing)."""
    total = AcceptanceCounters()
    for row in rows:
        counters = row.counters()
        if counters is not None:
            total = total + counters
    return total


def with_drafted(delta: AcceptanceCounters, rows: list[RequestRow]) -> AcceptanceCounters:
    """The server's ``/metrics`` delta with the steps that drafted each position, summed over ``rows``
    when every row carries them and their counters add up to exactly that delta (else unchanged)."""
    total = sums(rows)
    if total != delta or total.drafted_per_pos is None or any(r.drafts is not None and r.drafted_per_pos is None
                                                              for r in rows):
        return delta
    return AcceptanceCounters(delta.num_drafts, delta.num_draft_tokens, delta.num_accepted_tokens,
                              list(delta.accepted_per_pos), list(total.drafted_per_pos))


def _raw(c: AcceptanceCounters, width: int) -> dict[str, Any]:
    return {"num_drafts": c.num_drafts, "num_draft_tokens": c.num_draft_tokens,
            "num_accepted_tokens": c.num_accepted_tokens,
            "accepted_per_pos": (list(c.accepted_per_pos) + [0] * width)[:width]}


def check(rows: list[RequestRow], delta: AcceptanceCounters | None) -> dict[str, Any] | None:
    """The sums over ``rows`` against the server's ``/metrics`` delta around the same run: equal or
    not, and the difference (delta minus sums) with what may explain it (failed requests, requests
    without counters). None without rows or without a delta."""
    if not rows or delta is None:
        return None
    total = sums(rows)
    width = max(len(total.accepted_per_pos), len(delta.accepted_per_pos))
    mine, theirs = _raw(total, width), _raw(delta, width)
    difference = {k: ([b - a for a, b in zip(mine[k], theirs[k])] if isinstance(mine[k], list) else theirs[k] - mine[k])
                  for k in mine}
    return {"requests": len(rows), "failed": sum(not r.ok for r in rows),
            "without_counters": sum(r.ok and r.drafts is None for r in rows),
            "equal": mine == theirs, "sums": mine, "metrics_delta": theirs, "difference": difference}


def to_csv(runs: Iterable[tuple[int, list[RequestRow]]]) -> str:
    """``requests.csv``: one line a request of every run (``run``: the run's index)."""
    from llama4spec.files import csv_text

    lines = []
    for run, rows in runs:
        for r in rows:
            values = {**r.to_dict(), "run": run, "accepted_per_pos": " ".join(str(x) for x in r.accepted_per_pos)}
            lines.append([f"{values[c]:.3f}" if isinstance(values[c], float) else values[c] for c in COLUMNS])
    return csv_text(list(COLUMNS), lines)
