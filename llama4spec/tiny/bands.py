"""The banded tiny set-up: prompts in three input-length bands whose acceptance with the contrast pair
is known exactly, and differs by band (pure).

The tiny models' attention adds nothing, so the input length itself cannot change acceptance; what
a prompt's continuation meets does. The contrast draft (``tiny.contrast``) is wrong after every word
of its block and right elsewhere, and the target's greedy continuation is the successor chain of the
prompt's last word. So each band's prompts are word chains of one length whose continuations lie
wholly outside the block (every draft accepted) or wholly inside it (none accepted), in a fixed share
per band (``INSIDE``): the short band none inside, the middle band a quarter, the long band all. Each
band's counters follow exactly from its prompts (the greedy simulation of vLLM's counting), whatever
the order they are sent in. Shipped as ``dataset/prompts/tiny_bands.jsonl`` (``prompt_items()``;
``offset`` builds a set of distinct prompts, each that many words longer, in the same bands with the
same shares).
"""

from __future__ import annotations

from llama4spec.tiny import contrast
from llama4spec.tiny.words import FIRST_WORD, WORDS, word

# (words a prompt, share of its prompts continuing inside the block); a prompt's tokens are its words
# and the tokenizer's <s>
BANDS = ((8, 0.0), (32, 0.25), (96, 1.0))
TOKEN_BANDS = ((1, 16), (17, 64), (65, 128))  # the sweep's bands: [LOW, HIGH] prompt tokens, one per entry of BANDS
PER_BAND = 24
MAX_LOOKAHEAD = 7  # every continuation stays wholly in or out of the block for contrast.MAX_OUTPUT tokens and this k
MAX_OFFSET = 2  # distinct prompt sets: offset 0 (shipped), 1, 2: each prompt that many words longer


def _word_before(i: int, n: int) -> int:
    """The word ``n`` places before word ``i`` on the successor cycle."""
    return FIRST_WORD + (i - FIRST_WORD - n) % len(WORDS)


def chain(length: int, start: int) -> str:
    """``length`` words of the successor chain whose continuation starts at ``w<start>``."""
    return " ".join(word(_word_before(start, length - j)) for j in range(length))


def _starts(category: str) -> list[int]:
    """The continuation starts of one category (wholly inside or outside the block for outputs of up
    to ``contrast.MAX_OUTPUT`` tokens)."""
    first = contrast.BLOCK.start if category == contrast.IN_BLOCK else contrast.BLOCK.stop + 16
    return [first + j for j in range(PER_BAND)]


def band_items(length: int, inside: float, offset: int = 0) -> list[tuple[str, str]]:
    """One band's prompts with their categories: ``inside`` of them continuing inside the block, the
    two categories alternating while both last."""
    n_in = round(inside * PER_BAND)
    ins = [(chain(length + offset, s), contrast.IN_BLOCK) for s in _starts(contrast.IN_BLOCK)[:n_in]]
    outs = [(chain(length + offset, s), contrast.OUT_BLOCK) for s in _starts(contrast.OUT_BLOCK)[:PER_BAND - n_in]]
    return [item for i in range(PER_BAND) for item in (*ins[i:i + 1], *outs[i:i + 1])]


def prompt_items(offset: int = 0) -> list[tuple[str, str]]:
    """Every band's prompts, shortest band first."""
    if not 0 <= offset <= MAX_OFFSET:
        raise ValueError(f"offset {offset}: 0 to {MAX_OFFSET}")
    return [item for length, inside in BANDS for item in band_items(length, inside, offset)]
