"""The tiny pair's vocabulary and its successor chain (pure)."""

from __future__ import annotations

VOCAB = 256
HIDDEN = 256
SPECIALS = ["<s>", "</s>", "<pad>", "<unk>"]  # no substring of any word
BOS, EOS, PAD, UNK = range(4)
FIRST_WORD = len(SPECIALS)
WORDS = list(range(FIRST_WORD, VOCAB))


def word(i: int) -> str:
    return f"w{i}"


def successor(i: int) -> int:
    """The target's greedy next token: a cycle over the ordinary words (never a special token)."""
    if i < FIRST_WORD:
        return FIRST_WORD
    return FIRST_WORD + (i - FIRST_WORD + 1) % len(WORDS)
