"""The exact next-token distributions of the tiny targets, as categories of what follows a word
(pure: numpy).

Both tiny targets keep the residual stream one-hot, so the next-token distribution after word i
depends on i only through which words the head favours: the successor ``succ(i)`` (plain target:
logit s, every other word 0) and, for the spread target, also ``alt(i)``, the successor's successor
(``tiny.spread``). An emitted token therefore falls into one of three categories, "successor",
"second" (``alt``) and "other", with the same probabilities after every word.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from llama4spec.tiny import spread
from llama4spec.tiny.words import VOCAB, successor

CATEGORIES = ("successor", "second", "other")
TARGETS = ("target", "target_spread")  # the tiny models whose distribution is known exactly


def exact_target(model: str | None) -> str | None:
    """Which tiny target ``model`` is ("target", "target_spread"), None for any other model."""
    from llama4spec.tiny.paths import tiny_path

    if not model:
        return None
    where = Path(model).expanduser().resolve()
    return next((name for name in TARGETS if where == tiny_path(name).resolve()), None)


def _logits(target: str, token: int = 100) -> np.ndarray:
    """The logits after ``token``, in float64 from the float32 weights the build writes."""
    if target == "target_spread":
        return (spread.norm_scale() * spread.head(spread.TARGET_GAP)[:, token]).astype(np.float64)
    if target == "target":
        out = np.zeros(VOCAB)
        out[successor(token)] = float(spread.norm_scale() * np.float32(1.0))
        return out
    raise ValueError(f"no exact distribution for {target!r}")


def probabilities(target: str, sampling: "Sampling | float", token: int = 100) -> tuple[float, float, float]:
    """P(successor), P(second), P(other) after ``token`` with the sampling parameters (a temperature
    above 0, top-p, top-k: processed as vLLM does, ``processed``)."""
    from llama4spec.lossless.processed import Sampling, process

    s = sampling if isinstance(sampling, Sampling) else Sampling(float(sampling))
    p = process(_logits(target, token) / s.temperature, s)
    succ = float(p[successor(token)])
    second = float(p[spread.alternative(token)])
    return succ, second, max(0.0, 1.0 - succ - second)


def category(previous: int, token: int) -> int:
    """The category index of ``token`` emitted after ``previous``."""
    if token == successor(previous):
        return 0
    if token == spread.alternative(previous):
        return 1
    return 2


def counts(outputs: Sequence[Sequence[int]]) -> list[int]:
    """Category counts over every emitted token that follows an emitted token (each output's first
    token follows the prompt and is left out)."""
    out = [0, 0, 0]
    for ids in outputs:
        for prev, tok in zip(ids, ids[1:]):
            out[category(prev, tok)] += 1
    return out
