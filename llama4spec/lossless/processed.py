"""The target's processed next-token distribution at one context, from its raw logprobs (pure: numpy).

vLLM 0.32 returns prompt logprobs raw (log-softmax of the logits, whatever the request's
temperature), so the check applies the sampling parameters itself, in vLLM's order
(``vllm/v1/sample/ops/topk_topp_sampler.py``): the logits divided by the temperature, then top-k
(every token below the k-th largest logit masked; ties kept), then top-p (sorted ascending, the
tokens whose cumulative probability is at most ``1 - top_p`` masked, the largest always kept).

What the test needs of a context is three numbers: the processed probability of the target's
most likely token, of its second, and of the rest (``RANKS``), and which of the three the emitted
token is. Over the full vocabulary they are exact. From the top K logprobs only (a large
vocabulary), the tail's raw mass is known (one minus the top K's) but not how it is spread; the
processed figures are then computed at the two extremes of the tail's tempered mass and their
midpoint is used, with half their difference as the stated bound (0 at temperature 1 without
top-k/top-p, and whenever top-k or top-p cuts the tail off entirely).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

RANKS = ("top-1", "top-2", "rest")


@dataclass(frozen=True)
class Sampling:
    """The sampling parameters the reference is processed with (0 or -1 for top_k: off)."""

    temperature: float
    top_p: float = 1.0
    top_k: int = -1

    def __post_init__(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature {self.temperature} is not above 0")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p {self.top_p} is outside (0, 1]")
        if self.top_k < -1:
            raise ValueError(f"top_k {self.top_k} is below -1")

    @property
    def k(self) -> int | None:
        return self.top_k if self.top_k > 0 else None


@dataclass(frozen=True)
class Context:
    """One emitted token against the target's processed distribution at its context."""

    probs: tuple[float, float, float]  # P(top-1), P(top-2), P(rest) after processing
    observed: int  # the emitted token's rank category (0, 1, 2)
    bound: float = 0.0  # the largest error of ``probs`` from the tail's unknown spread (top-K only)


def process(z: np.ndarray, s: Sampling) -> np.ndarray:
    """Processed probabilities of tokens with tempered logits ``z`` (descending order not assumed)."""
    z = z.astype(np.float64).copy()
    if s.k is not None and s.k < z.size:
        kth = np.sort(z)[-s.k]
        z[z < kth] = -np.inf
    p = np.exp(z - z.max())
    p /= p.sum()
    if s.top_p < 1:
        order = np.argsort(p, kind="stable")
        cum = np.cumsum(p[order])
        cut = cum <= 1 - s.top_p
        cut[-1] = False
        p[order[cut]] = 0.0
        p /= p.sum()
    return p


def batch(logprobs: np.ndarray, tokens: np.ndarray, s: Sampling) -> tuple[np.ndarray, np.ndarray]:
    """``full`` for many contexts at once: raw logprobs (N x V) and emitted tokens (N) -> the processed
    rank-category probabilities (N x 3) and the observed categories (N)."""
    lp = np.asarray(logprobs, dtype=np.float64)
    n = lp.shape[0]
    rows = np.arange(n)
    z = lp / s.temperature
    order = np.argsort(-lp, axis=1, kind="stable")  # the target's ranking (descending)
    zs = np.take_along_axis(z, order, axis=1)
    if s.k is not None and s.k < lp.shape[1]:
        zs = np.where(zs < zs[:, s.k - 1:s.k], -np.inf, zs)
    p = np.exp(zs - zs[:, :1])
    p /= p.sum(axis=1, keepdims=True)
    if s.top_p < 1:
        asc = np.cumsum(p[:, ::-1], axis=1)[:, ::-1]  # mass of each token and every one below it
        cut = asc <= 1 - s.top_p
        cut[:, 0] = False
        p = np.where(cut, 0.0, p)
        p /= p.sum(axis=1, keepdims=True)
    rank = np.argmax(order == np.asarray(tokens)[:, None], axis=1)
    probs = np.stack([p[:, 0], p[:, 1], np.clip(1.0 - p[:, 0] - p[:, 1], 0.0, 1.0)], axis=1)
    observed = np.minimum(rank, 2)
    observed = np.where(p[rows, rank] == 0.0, 2, observed)
    return probs, observed


def full(logprobs: Sequence[float], token: int, s: Sampling) -> Context:
    """The exact context from the raw logprobs of every token of the vocabulary (``batch`` of one)."""
    lp = np.asarray(logprobs, dtype=np.float64)
    if not 0 <= token < lp.size:
        raise ValueError(f"token {token} is outside a vocabulary of {lp.size}")
    probs, observed = batch(lp[None, :], np.array([token]), s)
    return Context((float(probs[0, 0]), float(probs[0, 1]), float(probs[0, 2])), int(observed[0]))


def _tail_bounds(raw_tail: float, smallest: float, tail_tokens: int, temperature: float) -> tuple[float, float]:
    """The least and greatest sum of p^(1/T) over ``tail_tokens`` tokens of raw mass ``raw_tail`` in
    all, none above ``smallest`` (the K-th token's raw probability)."""
    if raw_tail <= 0 or tail_tokens <= 0:
        return 0.0, 0.0
    a = 1.0 / temperature
    even = tail_tokens * (raw_tail / tail_tokens) ** a  # spread evenly
    heap = (raw_tail / smallest) * smallest ** a if smallest > 0 else 0.0  # piled at the cap
    return (min(even, heap), max(even, heap))


def top_k(logprobs: Mapping[int, float], token: int, vocab: int, s: Sampling) -> Context:
    """The context from the raw logprobs of the top K tokens (and the emitted one, which vLLM adds when
    it is not among them): the midpoint over the tail's possible spreads, with the bound."""
    items = sorted(logprobs.items(), key=lambda kv: -kv[1])
    ids = [t for t, _ in items]
    lp = np.array([v for _, v in items], dtype=np.float64)
    raw = np.exp(lp)
    raw_tail = max(0.0, 1.0 - float(raw.sum()))
    low, high = _tail_bounds(raw_tail, float(raw.min()), vocab - len(ids), s.temperature)
    tops = []  # (P(top-1), P(top-2)) at each extreme of the tail
    for tail in (low, high):
        # the tail as one pseudo-token below every listed one (top-k at or under K cuts it off)
        z = np.append(lp / s.temperature, math.log(tail) if tail > 0 else -np.inf)
        if s.k is not None and s.k <= len(ids):
            z[-1] = -np.inf
        p = process(z, s)
        tops.append((float(p[0]), float(p[1]) if len(ids) > 1 else 0.0))
    (a1, a2), (b1, b2) = tops
    top1, top2 = (a1 + b1) / 2, (a2 + b2) / 2
    bound = max(abs(a1 - b1), abs(a2 - b2), abs((a1 + a2) - (b1 + b2))) / 2
    rank = ids.index(token) if token in ids else len(ids)
    return Context((top1, top2, max(0.0, 1.0 - top1 - top2)), min(rank, 2), float(bound))
