"""The prefix cache's hit rate from a vLLM server's own counters (``/metrics``): tokens looked up in
the cache (``vllm:prefix_cache_queries``) and tokens found there (``vllm:prefix_cache_hits``),
summed over engines; a run's figures are the deltas around it. Nothing here estimates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

QUERIES = "vllm:prefix_cache_queries"
HITS = "vllm:prefix_cache_hits"


@dataclass(frozen=True)
class PrefixCache:
    """Prompt tokens looked up in the prefix cache and those it held (cumulative, or a run's delta)."""

    queries: int = 0
    hits: int = 0

    def __sub__(self, before: "PrefixCache") -> "PrefixCache":
        return PrefixCache(self.queries - before.queries, self.hits - before.hits)

    def __add__(self, other: "PrefixCache") -> "PrefixCache":
        return PrefixCache(self.queries + other.queries, self.hits + other.hits)

    @property
    def hit_rate(self) -> float | None:
        """Tokens found over tokens looked up (None: nothing looked up)."""
        return self.hits / self.queries if self.queries else None

    def to_record(self) -> dict[str, Any]:
        return {"queries": self.queries, "hits": self.hits, "hit_rate": self.hit_rate}


def from_prometheus_text(text: str) -> PrefixCache:
    """The two counters of a server's ``/metrics`` page, summed over engines (0 where absent)."""
    from prometheus_client.parser import text_string_to_metric_families

    found = {QUERIES: 0, HITS: 0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name.removesuffix("_total")
            if name in found:
                found[name] += int(sample.value)
    return PrefixCache(found[QUERIES], found[HITS])


def summed(parts: list["PrefixCache | None"]) -> "PrefixCache | None":
    """The sum over runs that read the counters (None when none did)."""
    known = [p for p in parts if p is not None]
    return sum(known, PrefixCache()) if known else None
