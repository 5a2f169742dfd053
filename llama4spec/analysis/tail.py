"""Who owns a point's latency tail: the draft or the server (pure).

A request's TTFT is fixed before its first verification step, so a TTFT tail is queueing and
prefill: it is described by the client queue time and the arrival of the requests in it. Its TPOT
is paid step by step, so a TPOT tail can be the draft's: requests whose drafts the target rejects
produce fewer tokens a step. Over the requests of a point (its counted runs pooled), the requests
beyond the P90 TPOT are compared with the rest: how over-represented the low-acceptance requests
(acceptance length below the point's median) are there, with Fisher's exact test (one-sided,
``scipy.stats.fisher_exact``), and the same for each prompt category. Fewer than ``MIN_TAIL``
requests beyond the P90: no attribution. At most ``MAX_CATEGORIES`` categories are tested one by
one (the largest); the others are pooled as one group, so a record naming thousands of categories
costs what twenty do.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from llama4spec.results.requests import RequestRow

QUANTILE = 90  # the tail: requests beyond this percentile
MIN_TAIL = 10  # fewest requests in a tail that is attributed
LEVEL = 0.05  # Fisher's exact p below this: over-represented
MAX_CATEGORIES = 20  # categories tested one by one (the largest); the rest are one group, "other categories"


@dataclass(frozen=True)
class Share:
    """One group of requests (the low-acceptance ones, or a category) in the tail against overall."""

    name: str
    requests: int
    in_tail: int
    share_all: float  # of every request
    share_tail: float  # of the requests in the tail
    p_value: float  # Fisher's exact, one-sided: more often in the tail than elsewhere
    acceptance_length: float | None = None  # of the group's requests pooled (1 + accepted / steps)

    @property
    def ratio(self) -> float | None:
        """How over-represented the group is in the tail (1: as often as overall)."""
        return self.share_tail / self.share_all if self.share_all else None

    @property
    def over(self) -> bool:
        return self.p_value < LEVEL and self.share_tail > self.share_all

    def to_record(self) -> dict[str, Any]:
        return {"name": self.name, "requests": self.requests, "in_tail": self.in_tail, "share_all": self.share_all,
                "share_tail": self.share_tail, "ratio": self.ratio, "p_value": self.p_value,
                "over_represented": self.over, "acceptance_length": self.acceptance_length}


@dataclass(frozen=True)
class TtftTail:
    """The requests beyond the P90 TTFT: how long they waited for a client slot, and when they came."""

    threshold_ms: float
    tail: int
    queue_tail_ms: float | None  # median client queue time in the tail
    queue_rest_ms: float | None  # and elsewhere
    arrival_tail_ms: float | None  # median arrival after the run's first request, in the tail
    arrival_rest_ms: float | None

    def sentence(self) -> str:
        text = (f"TTFT is fixed before the first verification step, so its tail is queueing and prefill: the "
                f"{self.tail} requests beyond the P{QUANTILE} TTFT ({self.threshold_ms:.1f} ms) waited a median "
                f"{_ms(self.queue_tail_ms)} for a client slot ({_ms(self.queue_rest_ms)} elsewhere)")
        if self.arrival_tail_ms is not None and self.arrival_rest_ms is not None:
            text += (f" and arrived a median {self.arrival_tail_ms / 1000:.2f} s into the run "
                     f"({self.arrival_rest_ms / 1000:.2f} s elsewhere)")
        return text + "."

    def to_record(self) -> dict[str, Any]:
        return {"threshold_ms": self.threshold_ms, "tail": self.tail, "queue_tail_ms": self.queue_tail_ms,
                "queue_rest_ms": self.queue_rest_ms, "arrival_tail_ms": self.arrival_tail_ms,
                "arrival_rest_ms": self.arrival_rest_ms, "sentence": self.sentence()}


@dataclass(frozen=True)
class Attribution:
    """A point's TPOT tail attributed: the low-acceptance requests and each category in it."""

    requests: int  # requests with a TPOT and acceptance counters
    tail: int  # of them beyond the P90 TPOT
    threshold_ms: float  # the P90 TPOT
    low_below: float  # a request is low-acceptance below this acceptance length (the median)
    low: Share
    categories: tuple[Share, ...]
    ttft: TtftTail | None = None

    @property
    def drafts_fault(self) -> bool:
        return self.low.over

    def sentence(self) -> str:
        said = (f"{self.low.share_tail:.0%} of the {self.tail} requests beyond the P{QUANTILE} TPOT "
                f"({self.threshold_ms:.1f} ms) have an acceptance length below {self.low_below:.2f}, against "
                f"{self.low.share_all:.0%} of all {self.requests} (Fisher's exact p = {self.low.p_value:.2g})")
        if self.drafts_fault:
            return f"The TPOT tail is the draft's: low-acceptance requests are over-represented in it; {said}."
        return (f"The TPOT tail is the server's: low-acceptance requests are not over-represented in it; {said}; "
                f"look at batching and scheduling.")

    def to_record(self) -> dict[str, Any]:
        return {"requests": self.requests, "tail": self.tail, "quantile": QUANTILE, "tpot_threshold_ms": self.threshold_ms,
                "low_acceptance_below": self.low_below, "low_acceptance": self.low.to_record(),
                "categories": [c.to_record() for c in self.categories], "drafts_fault": self.drafts_fault,
                "sentence": self.sentence(), "ttft": self.ttft.to_record() if self.ttft else None,
                "test": "Fisher's exact, one-sided (over-represented in the tail)", "level": LEVEL}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def percentile(values: Sequence[float], q: float = QUANTILE) -> float:
    """The ``q``-th percentile (linear interpolation, as numpy's default)."""
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=float), q))


def fisher_greater(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher's exact p-value that the first row is more often in the first column:
    [[a, b], [c, d]] = [[group in tail, group elsewhere], [others in tail, others elsewhere]]."""
    from scipy.stats import fisher_exact

    return float(fisher_exact([[a, b], [c, d]], alternative="greater").pvalue)


def _pooled_length(rows: Sequence[RequestRow]) -> float | None:
    steps = sum(r.drafts or 0 for r in rows)
    return 1 + sum(r.accepted or 0 for r in rows) / steps if steps else None


def share(name: str, rows: Sequence[RequestRow], tail: set[int], member: Callable[[RequestRow], bool]) -> Share:
    """How often the requests ``member`` picks are in ``tail`` (indexes into ``rows``) against overall."""
    inside = [i for i, r in enumerate(rows) if member(r)]
    return _share(name, len(rows), len(tail), len(inside), sum(i in tail for i in inside),
                  [rows[i] for i in inside])


def _share(name: str, total: int, tail: int, members: int, in_tail: int, rows: Sequence[RequestRow]) -> Share:
    """A group of ``members`` requests, ``in_tail`` of them in a tail of ``tail`` out of ``total``."""
    a, b = in_tail, members - in_tail
    c, d = tail - a, total - members - (tail - a)
    return Share(name, members, a, members / total if total else 0.0, a / tail if tail else 0.0,
                 fisher_greater(a, b, c, d), _pooled_length(rows))


def category_shares(rows: Sequence[RequestRow], tail: set[int]) -> tuple[Share, ...]:
    """Each category's share, in one pass over the requests: the ``MAX_CATEGORIES`` largest one by
    one (by name), the rest pooled as one group, so the work is bounded however many categories a
    record names."""
    members: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if r.category is not None:
            members.setdefault(r.category, []).append(i)
    kept = sorted(sorted(members, key=lambda n: (-len(members[n]), n))[:MAX_CATEGORIES])
    groups = [(f"category {n}", members[n]) for n in kept]
    rest = [i for n, idx in members.items() if n not in set(kept) for i in idx]
    if rest:
        groups.append((f"other categories ({len(members) - len(kept)})", rest))
    return tuple(_share(name, len(rows), len(tail), len(idx), sum(i in tail for i in idx), [rows[i] for i in idx])
                 for name, idx in groups)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def ttft_tail(rows: Sequence[RequestRow]) -> TtftTail | None:
    """The P90 TTFT tail's queue time and arrival (None: fewer than ``MIN_TAIL`` requests in it)."""
    timed = [r for r in rows if r.ok and r.ttft_ms is not None]
    if not timed:
        return None
    threshold = percentile([r.ttft_ms for r in timed])
    tail = [r for r in timed if r.ttft_ms > threshold]
    rest = [r for r in timed if r.ttft_ms <= threshold]
    if len(tail) < MIN_TAIL:
        return None
    values = lambda rs, key: [getattr(r, key) for r in rs if getattr(r, key) is not None]  # noqa: E731
    return TtftTail(threshold, len(tail), _median(values(tail, "queue_ms")), _median(values(rest, "queue_ms")),
                    _median(values(tail, "arrival_ms")), _median(values(rest, "arrival_ms")))


def attribute(rows: Sequence[RequestRow]) -> Attribution | None:
    """The TPOT tail of a point's requests attributed (None: fewer than ``MIN_TAIL`` requests with
    counters beyond its P90 TPOT)."""
    usable = [r for r in rows if r.ok and r.tpot_ms is not None and r.acceptance_length is not None]
    if len(usable) <= MIN_TAIL:
        return None
    threshold = percentile([r.tpot_ms for r in usable])
    tail = {i for i, r in enumerate(usable) if r.tpot_ms > threshold}
    if len(tail) < MIN_TAIL:
        return None
    median = statistics.median(r.acceptance_length for r in usable)
    low = share(f"acceptance length below {median:.2f}", usable, tail, lambda r: r.acceptance_length < median)
    return Attribution(len(usable), len(tail), threshold, median, low, category_shares(usable, tail), ttft_tail(rows))


HEADER = ["requests", "count", "beyond P90 TPOT", "share overall", "share of tail", "over-representation",
          "Fisher p", "acceptance length"]


def table_rows(a: Attribution) -> list[list[str]]:
    """The attribution table's rows: the low-acceptance requests, then each category."""
    def cells(s: Share) -> list[str]:
        ratio = "-" if s.ratio is None else f"{s.ratio:.2f}x"
        length = "-" if s.acceptance_length is None else f"{s.acceptance_length:.2f}"
        return [s.name, str(s.requests), str(s.in_tail), f"{s.share_all:.0%}", f"{s.share_tail:.0%}", ratio,
                f"{s.p_value:.2g}", length]

    return [cells(a.low)] + [cells(c) for c in a.categories]
