"""The reference of the context-conditioned test: the target alone scores prompt + output token ids
(an engine without speculation, raw prompt logprobs), and each emitted token after an output's
first becomes a ``processed.Context``. ``contexts`` is pure; ``score`` asks a vLLM ``LLM``.

Over the full vocabulary where it is affordable (``FULL_VOCAB`` tokens or fewer: the tiny targets),
otherwise the top ``TOP_K`` logprobs with the tail's bound (``processed.top_k``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from llama4spec.lossless import processed
from llama4spec.lossless.processed import Context, Sampling

FULL_VOCAB = 4096  # a vocabulary this size or smaller is scored whole
TOP_K = 20  # otherwise: the top K logprobs (vLLM's default max_logprobs)


@dataclass(frozen=True)
class Scored:
    """One request to score: its prompt's token ids and the output's."""

    prompt: list[int]
    output: list[int]


def width(vocab: int) -> int:
    """The prompt logprobs to ask for: the whole vocabulary, or the top K."""
    return vocab if vocab <= FULL_VOCAB else TOP_K


def contexts(item: Scored, logprobs: Sequence[Mapping[int, float] | None], vocab: int,
             sampling: Sampling) -> list[Context]:
    """The contexts of ``item``'s output tokens after its first, from the prompt logprobs of
    prompt + output (entry j: the distribution of token j given the tokens before it)."""
    ids = item.prompt + item.output
    start = len(item.prompt) + 1
    if len(logprobs) < len(ids):
        raise ValueError(f"{len(logprobs)} prompt logprobs for {len(ids)} tokens")
    rows = [logprobs[j] for j in range(start, len(ids))]
    if any(row is None for row in rows):
        raise ValueError("a position without prompt logprobs")
    if all(len(row) >= vocab for row in rows):  # type: ignore[arg-type]
        matrix = np.full((len(rows), vocab), -np.inf)
        for r, row in enumerate(rows):
            keys = np.fromiter(row.keys(), dtype=np.int64)  # type: ignore[union-attr]
            matrix[r, keys] = np.fromiter(row.values(), dtype=np.float64)  # type: ignore[union-attr]
        probs, observed = processed.batch(matrix, np.array(ids[start:]), sampling)
        return [Context((float(p[0]), float(p[1]), float(p[2])), int(o)) for p, o in zip(probs, observed)]
    return [processed.top_k(row, tok, vocab, sampling) for row, tok in zip(rows, ids[start:])]  # type: ignore[arg-type]


def score(llm: Any, items: Sequence[Scored], sampling: Sampling) -> list[list[Context]]:
    """Each item's contexts, scored by ``llm`` (a target without a draft, max_logprobs >= the width)."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    vocab = llm.llm_engine.model_config.get_vocab_size()
    params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=width(vocab))
    done = llm.generate([TokensPrompt(prompt_token_ids=i.prompt + i.output) for i in items], params, use_tqdm=False)
    out = []
    for item, result in zip(items, done):
        rows = [None if step is None else {t: lp.logprob for t, lp in step.items()} for step in result.prompt_logprobs]
        out.append(contexts(item, rows, vocab, sampling))
    return out
