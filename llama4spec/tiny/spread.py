"""The spread tiny pair: a next-word distribution known exactly at every temperature (pure: numpy).

The tiny models keep the residual stream one-hot (``tiny.weights``), and the final RMSNorm scales
it by ``s = 1 / sqrt(1/256 + 1e-5)``, so a head column becomes the logits times ``1 / s``. The
spread head puts ``(L + gap) / s`` on the successor ``succ(i)`` and ``L / s`` on a second word
``alt(i)``; the other 254 words keep logit 0 and carry under 2e-7 at T <= 1. At temperature T:

    p_T(succ) = e^((L+gap)/T) / (e^((L+gap)/T) + e^(L/T) + 254)

The target uses ``TARGET_GAP = ln(0.7 / 0.3)`` (0.700 at T = 1, 0.804 at T = 0.6), the spread draft
``DRAFT_GAP = ln(0.9 / 0.1)``. vLLM's per-position acceptance is unconditional (position i counts
only when every earlier one was accepted), so with the target's probability r of accepting one
drafted word, rate_i = r^(i+1) and the mean acceptance length is 1 + their sum, (1 - r^(k+1)) / (1 - r):

* greedy drafting (vLLM treats the draft as one-hot on its argmax, the successor): r = p_T(succ);
* probabilistic drafting (the draft samples from its own q_T, accepted with min(1, p/q)):
  r = sum_x min(p_T(x), q_T(x)), one minus the total-variation distance.

Every figure is computed from the float32 weights as the build writes them, not from the rounded
probabilities above.
"""

from __future__ import annotations

import math

import numpy as np

from llama4spec.tiny.words import HIDDEN, VOCAB, successor

LEVEL = 20.0  # L: the second word's logit, large enough that the other words carry under 2e-7
TARGET_GAP = math.log(0.7 / 0.3)
DRAFT_GAP = math.log(0.9 / 0.1)
METHODS = ("greedy", "probabilistic")


def alternative(i: int) -> int:
    """The second word the spread head puts weight on: the successor's successor (never special)."""
    return successor(successor(i))


def norm_scale() -> np.float32:
    """The final RMSNorm's factor on a one-hot residual, in float32 as the engine computes it."""
    return np.float32(1.0) / np.sqrt(np.float32(1.0 / HIDDEN) + np.float32(1e-5))


def head(gap: float) -> np.ndarray:
    """The spread ``lm_head`` (vocab x hidden, float32)."""
    s = norm_scale()
    w = np.zeros((VOCAB, HIDDEN), dtype=np.float32)
    for i in range(VOCAB):
        w[successor(i), i] = np.float32(LEVEL + gap) / s
        w[alternative(i), i] = np.float32(LEVEL) / s
    return w


def probabilities(gap: float, temperature: float, token: int = 100) -> np.ndarray:
    """The next-word distribution after ``token`` at ``temperature`` (0: one-hot on the argmax),
    from the float32 logits ``s * head``, in float64."""
    logits = (norm_scale() * head(gap)[:, token]).astype(np.float64)
    if temperature == 0:
        out = np.zeros(VOCAB)
        out[int(np.argmax(logits))] = 1.0
        return out
    z = logits / temperature
    e = np.exp(z - z.max())
    return e / e.sum()


def accept_probability(temperature: float, method: str = "greedy") -> float:
    """The chance that the target accepts one drafted word of the spread draft."""
    if method not in METHODS:
        raise ValueError(f"unknown draft sampling method {method!r}")
    p = probabilities(TARGET_GAP, temperature)
    if method == "greedy" or temperature == 0:
        q = probabilities(DRAFT_GAP, 0.0)  # the draft's argmax: the successor
    else:
        q = probabilities(DRAFT_GAP, temperature)
    return float(np.minimum(p, q).sum())


def expected_rates(temperature: float, k: int, method: str = "greedy") -> list[float]:
    """vLLM's per-position acceptance rates at lookahead ``k``: r^(i+1) for i < k."""
    r = accept_probability(temperature, method)
    return [r ** (i + 1) for i in range(k)]

