"""The figures an offline run's tables show beside each pass's own: each category's acceptance and
speedup, where two passes' greedy outputs first differ, and the rates the spread tiny pair gives
exactly at a temperature."""

from __future__ import annotations

from pathlib import Path

from llama4spec.analysis.categories import CategoryStat
from llama4spec.config.schema import Config
from llama4spec.offline.outcome import EngineRun


def exact_rates(cfg: Config, temperature: float) -> list[float] | None:
    """The per-position rates the spread tiny pair gives at ``temperature`` (``tiny.spread``), for
    that pair under its own draft; None for any other pair, or under a lookahead schedule."""
    from llama4spec.tiny import spread
    from llama4spec.tiny.paths import tiny_path

    if cfg.draft.lookahead_schedule or not cfg.target.model or not cfg.draft.model:
        return None
    same = [Path(cfg.target.model).resolve() == tiny_path("target_spread").resolve(),
            Path(cfg.draft.model).resolve() == tiny_path("draft_spread").resolve()]
    if not all(same):
        return None
    return spread.expected_rates(temperature, cfg.lookahead, cfg.draft.sample_method or "greedy")


def category_stats(cfg: Config, spec: EngineRun, base: EngineRun | None = None) -> list[CategoryStat]:
    """One ``CategoryStat`` per category of a speculative run (with the speedup over ``base``, the
    same categories without a draft, when given)."""
    if not spec.categories or spec.stats.k is None:
        return []
    base_by = {c.category: c for c in (base.categories if base else [])}
    out = []
    for c in spec.categories:
        counters, other = c.stats.counters, base_by.get(c.category)
        s, b = c.stats.output_tokens_per_s, other.stats.output_tokens_per_s if other else None
        out.append(CategoryStat(
            category=c.category, draft=cfg.draft.name, lookahead=spec.stats.k, concurrency=None, prompts=c.prompts,
            acceptance_length=counters.mean_acceptance_length if counters else None,
            rates=tuple(counters.rate_per_position(spec.stats.k)) if counters else (),
            speedup=s / b if s and b else None,
        ))
    return out


def first_difference(a: list[list[int]], b: list[list[int]]) -> tuple[int, int] | None:
    """(prompt index, token position) of the first place two runs' outputs differ, or None."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            pos = next((j for j, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            return i, pos
    return None
