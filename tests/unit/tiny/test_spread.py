"""The spread tiny pair: its head, and the acceptance it implies at each temperature (pure)."""

from __future__ import annotations

import numpy as np
import pytest

from llama4spec.tiny import spread, words


def test_alternative_is_an_ordinary_word_beside_the_successor():
    for i in range(words.VOCAB):
        assert spread.alternative(i) >= words.FIRST_WORD and spread.alternative(i) != words.successor(i)


@pytest.mark.parametrize("temperature,rates,length", [
    (1.0, (0.700, 0.490, 0.343), 2.53),
    (0.6, (0.804, 0.647, 0.520), 2.97),
    (0.0, (1.0, 1.0, 1.0), 4.0),
])
def test_greedy_drafting_accepts_p_to_the_position(temperature, rates, length):
    """a_i = p_T^(i+1) and E(k) = (1 - p^(k+1)) / (1 - p): the figures of the design, to 3 places."""
    got = spread.expected_rates(temperature, 3)
    assert got == pytest.approx(rates, abs=5e-4)
    assert 1 + sum(got) == pytest.approx(length, abs=5e-3)
    p = spread.accept_probability(temperature)
    if p < 1:
        assert 1 + sum(got) == pytest.approx((1 - p ** 4) / (1 - p))


def test_probabilistic_drafting_accepts_one_minus_the_total_variation():
    """With q = (0.9, 0.1) against p = (0.7, 0.3) at T = 1: min(p, q) sums to 0.8."""
    assert spread.accept_probability(1.0, "probabilistic") == pytest.approx(0.8, abs=1e-6)
    assert spread.accept_probability(0.6, "probabilistic") > spread.accept_probability(0.6, "greedy")
    assert spread.accept_probability(0.0, "probabilistic") == 1.0
    with pytest.raises(ValueError):
        spread.accept_probability(1.0, "nope")


def test_the_other_words_carry_almost_nothing():
    p = spread.probabilities(spread.TARGET_GAP, 1.0)
    top = p[[words.successor(100), spread.alternative(100)]]
    assert 0 < 1 - top.sum() < 2e-7


def test_the_built_heads_are_the_spread_heads(tiny_dir):
    from safetensors.numpy import load_file

    target = load_file(str(tiny_dir / "target_spread" / "model.safetensors"))["lm_head.weight"]
    draft = load_file(str(tiny_dir / "draft_spread" / "model.safetensors"))["lm_head.weight"]
    assert np.array_equal(target, spread.head(spread.TARGET_GAP))
    assert np.array_equal(draft, spread.head(spread.DRAFT_GAP))
    for i in range(words.VOCAB):  # greedy output and greedy drafting stay the successor chain
        assert target[:, i].argmax() == draft[:, i].argmax() == words.successor(i)
