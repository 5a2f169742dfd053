"""Synthetic acceptance: vLLM's ``rejection_sample_method: synthetic`` as draft settings.

With it, vLLM's rejection sampler accepts draft tokens at a set rate whatever the draft proposes
(``vllm/config/speculative.py``: ``synthetic_acceptance_length`` in [1, k + 1], or
``synthetic_acceptance_rates``: k unconditional per-position rates in [0, 1], non-increasing), so
the engine's cost of speculating is measured at any acceptance before a good draft exists. The
checks here are vLLM's own, made before anything starts, in the user's words.
"""

from __future__ import annotations

import math
from typing import Any

from llama4spec.config.schema import DraftConfig

METHOD = "synthetic"  # vLLM's rejection_sample_method value


def is_synthetic(d: DraftConfig) -> bool:
    return d.synthetic_acceptance_length is not None or d.synthetic_acceptance_rates is not None


def synthetic_settings(d: DraftConfig) -> dict[str, Any]:
    """The speculative-config entries for synthetic acceptance (empty without it)."""
    if d.synthetic_acceptance_length is not None:
        return {"rejection_sample_method": METHOD, "synthetic_acceptance_length": float(d.synthetic_acceptance_length)}
    if d.synthetic_acceptance_rates is not None:
        return {"rejection_sample_method": METHOD,
                "synthetic_acceptance_rates": [float(r) for r in d.synthetic_acceptance_rates]}
    return {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def synthetic_problems(d: DraftConfig, lookahead: int) -> list[str]:
    """Every problem with the synthetic-acceptance settings, one line each."""
    if not is_synthetic(d):
        return []
    problems: list[str] = []
    length, rates = d.synthetic_acceptance_length, d.synthetic_acceptance_rates
    if d.method is None:
        problems.append("draft.synthetic_acceptance_*: synthetic acceptance verifies a draft's tokens; name a draft "
                        "(draft=tiny_eagle, say) or drop the setting")
    if length is not None and rates is not None:
        problems.append("draft.synthetic_acceptance_length and draft.synthetic_acceptance_rates both set; "
                        "give one of them")
    k = lookahead if isinstance(lookahead, int) and not isinstance(lookahead, bool) else 0
    if length is not None:
        x = _number(length)
        if x is None or not 1.0 <= x <= k + 1:
            problems.append(f"draft.synthetic_acceptance_length={length}: must be in [1, lookahead + 1] = "
                            f"[1, {k + 1}] (1: every draft token rejected; {k + 1}: all {k} accepted)")
    if rates is not None:
        values = [_number(r) for r in rates] if isinstance(rates, (list, tuple)) else None
        if values is None or len(values) != k:
            problems.append(f"draft.synthetic_acceptance_rates={rates}: give lookahead ({k}) rates, one per "
                            f"position, e.g. [{', '.join(['0.8'] * max(k, 1))}]")
        elif any(v is None or not 0.0 <= v <= 1.0 for v in values):
            problems.append(f"draft.synthetic_acceptance_rates={rates}: each rate must be in [0, 1]")
        elif any(b > a for a, b in zip(values, values[1:])):
            problems.append(f"draft.synthetic_acceptance_rates={rates}: the rates rise with position; they are "
                            f"unconditional (position i accepted with every earlier one), so list them non-increasing")
    return problems
