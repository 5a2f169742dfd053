"""The banded tiny set-up's prompts (pure): each band's share of continuations inside the contrast
draft's block, its token counts within its band, distinct prompt sets, and the shipped file."""

from __future__ import annotations

import json

import pytest

from llama4spec.tiny import bands, contrast
from tests.helpers import REPO


@pytest.mark.parametrize("offset", range(bands.MAX_OFFSET + 1))
def test_each_band_continues_inside_the_block_at_its_share(offset: int) -> None:
    for length, inside in bands.BANDS:
        items = bands.band_items(length, inside, offset)
        assert len(items) == bands.PER_BAND and all(len(p.split()) == length + offset for p, _ in items)
        assert all(contrast.category_of(p, bands.MAX_LOOKAHEAD, contrast.MAX_OUTPUT) == c for p, c in items)  # wholly in or out
        assert sum(c == contrast.IN_BLOCK for _, c in items) == round(inside * bands.PER_BAND)


def test_token_counts_fall_in_their_band_and_the_sets_are_distinct() -> None:
    for (length, _), (low, high) in zip(bands.BANDS, bands.TOKEN_BANDS):
        assert all(low <= length + o + 1 <= high for o in range(bands.MAX_OFFSET + 1))  # the words and <s>
    sets = [{p for p, _ in bands.prompt_items(o)} for o in range(bands.MAX_OFFSET + 1)]
    assert all(len(s) == 3 * bands.PER_BAND for s in sets)
    assert not sets[0] & sets[1] and not sets[1] & sets[2] and not sets[0] & sets[2]
    with pytest.raises(ValueError):
        bands.prompt_items(bands.MAX_OFFSET + 1)


def test_the_shipped_prompt_file_is_the_generated_one() -> None:
    lines = [json.loads(line) for line in (REPO / "conf" / "dataset" / "prompts" / "tiny_bands.jsonl").read_text().splitlines()]
    assert [(x["prompt"], x["category"]) for x in lines] == bands.prompt_items()
