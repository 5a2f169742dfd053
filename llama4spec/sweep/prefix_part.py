"""A sweep report's prefix-cache lines: each point's hit rate over its counted runs, from the
server's own counters around each run (``results.prefix_cache``), with the prefix caching and the
EAGLE block drop its config set."""

from __future__ import annotations

from typing import Any, Mapping

from llama4spec.analysis.points import dotted
from llama4spec.results.bench import BenchRecord


def setting(config: Mapping[str, Any]) -> str:
    """The point's prefix caching in words, from its config (plain data)."""
    on = dotted(config, "serve.enable_prefix_caching")
    said = "prefix caching " + ("on (vLLM's default)" if on is None else "on" if on else "off")
    kept = dotted(config, "draft.disable_eagle_block_drop")
    return said + (", last block of each hit kept" if on is not False and kept else "")


def line(pid: str, config: Mapping[str, Any], record: BenchRecord) -> str | None:
    """One point's line (None: its record holds no prefix-cache counters)."""
    cache = record.prefix_cache
    if cache is None:
        return None
    if not cache.queries:
        return f"{pid}: no prompt token looked up in the prefix cache ({setting(config)})"
    return (f"{pid}: hit rate {cache.hit_rate:.1%} ({cache.hits:,} of {cache.queries:,} prompt tokens found in "
            f"the cache, over {len(record.counted_runs())} counted run(s); {setting(config)})")


def lines(ids: list[str], measured: Mapping[str, Any]) -> list[str]:
    """The lines of the points ``ids`` that were measured (``measured``: id -> ``rundir.Measured``)."""
    found = (line(pid, measured[pid].config, measured[pid].record) for pid in ids if pid in measured)
    return [text for text in found if text is not None]

