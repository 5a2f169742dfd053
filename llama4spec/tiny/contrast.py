"""The contrast tiny pair: a draft wrong on every word of one vocabulary block (pure).

``draft=tiny_eagle_contrast`` proposes the successor of the successor after every word of
``BLOCK`` and the successor elsewhere. The target's greedy continuation is the successor chain,
so a continuation that stays inside the block rejects every draft (acceptance length 1.0) and one
that stays outside it accepts every draft (k + 1: 4.0 at lookahead 3). Its prompts
(``prompt_items``, shipped as ``dataset/prompts/tiny_contrast.jsonl``) are word chains in two
categories, ``in_block`` and ``out_block``, alternating, for outputs of up to ``MAX_OUTPUT`` tokens:
a large contrast in acceptance, for attributing latency tails to the draft.
"""

from __future__ import annotations

from llama4spec.tiny.words import successor, word

BLOCK = range(100, 164)  # the words the draft is wrong after (w100 ... w163)
IN_BLOCK = "in_block"
OUT_BLOCK = "out_block"
CATEGORIES = (IN_BLOCK, OUT_BLOCK)
PER_CATEGORY = 8
MAX_OUTPUT = 32  # tokens a continuation may run and keep its category (the last step drafts k more)
CHAIN = 6  # words per prompt


def draft_next(i: int) -> int:
    """The contrast draft's next token: wrong (the successor's successor) after a block word."""
    return successor(successor(i)) if i in BLOCK else successor(i)


def _starts(category: str) -> list[int]:
    """The first continuation token of each prompt of ``category``."""
    first = BLOCK.start if category == IN_BLOCK else BLOCK.stop + 16
    return [first + 3 * j for j in range(PER_CATEGORY)]


def prompt(start: int) -> str:
    """A chain of ``CHAIN`` words whose continuation starts at ``w<start>``."""
    return " ".join(word(start - CHAIN + j) for j in range(CHAIN))


def prompt_items() -> list[tuple[str, str]]:
    """Every prompt with its category, the categories alternating."""
    pairs = zip(_starts(IN_BLOCK), _starts(OUT_BLOCK))
    return [(prompt(s), c) for starts in pairs for s, c in zip(starts, CATEGORIES)]


def category_of(text: str, k: int = 3, output: int = MAX_OUTPUT) -> str | None:
    """The category of a prompt whose continuation (``output`` tokens, and the ``k`` more a last
    step drafts) lies wholly inside or wholly outside the block; None when it crosses its edge."""
    x = successor(int(text.split()[-1][1:]))
    inside = []
    for _ in range(output + k):
        inside.append(x in BLOCK)
        x = successor(x)
    return IN_BLOCK if all(inside) else OUT_BLOCK if not any(inside) else None
