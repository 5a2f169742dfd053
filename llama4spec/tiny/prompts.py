"""The built-in prompts for the tiny pair: word chains, each with a category (pure).

The tiny target continues a chain with the successor of its last word. The imperfect draft is
wrong after ``WRONG_TOKENS``, so what it accepts depends on where the continuation starts:

* ``clean_start``: the draft is right on the first ``CLEAN_SPAN`` tokens of the continuation
  (a first verification step at lookahead 3 accepts every draft);
* ``early_miss``: it is wrong on one of them.

With the imperfect draft, ``clean_start`` chains accept more per step than ``early_miss`` ones
(for instance at lookahead 3 and 64 tokens, about 2.53 against 2.44 tokens per step over the
words); with the perfect draft both accept everything.
"""

from __future__ import annotations

from llama4spec.tiny.weights import draft_successor
from llama4spec.tiny.words import successor, word

CLEAN_START = "clean_start"
EARLY_MISS = "early_miss"
CATEGORIES = (CLEAN_START, EARLY_MISS)
CLEAN_SPAN = 3
CHAIN = 10  # words per chain, before its first three are repeated


def _start(i: int) -> int:
    return 4 + (37 * i) % 230


def chain_text(start: int) -> str:
    """A chain of ``CHAIN`` words from ``w<start>``, its first three repeated (n-gram lookup finds them)."""
    chain = [word(start + j) for j in range(CHAIN)]
    return " ".join(chain + chain[:3])


def last_token(text: str) -> int:
    return int(text.split()[-1][1:])


def category_of(last: int) -> str:
    """The category of a chain ending in token ``last``: is the imperfect draft right on the first
    ``CLEAN_SPAN`` tokens of its continuation?"""
    x = successor(last)
    for _ in range(CLEAN_SPAN):
        if draft_successor(x, imperfect=True) != successor(x):
            return EARLY_MISS
        x = successor(x)
    return CLEAN_START


def builtin_prompts(n: int) -> list[str]:
    """``n`` word chains (the same texts for a given ``n``, always)."""
    return [chain_text(_start(i)) for i in range(n)]


def builtin_items(n: int) -> list[tuple[str, str]]:
    """``builtin_prompts(n)``, each with its category."""
    return [(text, category_of(last_token(text))) for text in builtin_prompts(n)]


def category_prompts(category: str, n: int) -> list[str]:
    """The first ``n`` chains of the built-in sequence that fall in ``category``."""
    out: list[str] = []
    i = 0
    while len(out) < n:
        text = chain_text(_start(i))
        if category_of(last_token(text)) == category:
            out.append(text)
        i += 1
    return out
