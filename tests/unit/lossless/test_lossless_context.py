"""The context-conditioned test's pure parts: the reference processed as vLLM processes it, the tail's
bound from the top K, the test itself, and the simulation (1,000 checks with a target whose
distribution depends on the whole context)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llama4spec.lossless import check, conditioned, processed, simulate
from llama4spec.lossless.processed import Sampling
from llama4spec.lossless.scoring import Scored, contexts


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def test_the_reference_is_processed_in_vllms_order():
    lp = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    plain = processed.full(lp, 1, Sampling(1.0))
    assert plain.probs == pytest.approx((0.5, 0.3, 0.2)) and plain.observed == 1
    hot = processed.full(lp, 3, Sampling(0.5))
    q = _softmax(lp / 0.5)
    assert hot.probs == pytest.approx((q[0], q[1], q[2] + q[3])) and hot.observed == 2
    # top-p 0.7 at T=1: ascending cumulative 0.05, 0.2 <= 0.3 are cut; 0.5 and 0.3 stay
    nucleus = processed.full(lp, 0, Sampling(1.0, top_p=0.7))
    assert nucleus.probs == pytest.approx((0.5 / 0.8, 0.3 / 0.8, 0.0))
    cut = processed.full(lp, 2, Sampling(1.0, top_p=0.7))  # a token outside the nucleus: "rest", probability 0
    assert cut.observed == 2 and cut.probs[2] == pytest.approx(0.0)
    topk = processed.full(lp, 0, Sampling(1.0, top_k=2))
    assert topk.probs == pytest.approx((0.5 / 0.8, 0.3 / 0.8, 0.0))
    probs, observed = processed.batch(np.stack([lp, lp]), np.array([1, 3]), Sampling(0.5))
    assert probs[0] == pytest.approx(hot.probs) and list(observed) == [1, 2]


@pytest.mark.parametrize("bad", [dict(temperature=0.0), dict(temperature=math.nan), dict(temperature=1, top_p=0.0),
                                 dict(temperature=1, top_p=1.5), dict(temperature=1, top_k=-2)])
def test_sampling_parameters_out_of_range_are_refused(bad):
    with pytest.raises(ValueError):
        Sampling(**bad)


def test_from_the_top_k_the_tail_is_bounded_and_exact_at_temperature_1():
    rng = np.random.default_rng(0)
    lp = np.log(_softmax(rng.normal(0, 2, 500)))
    order = np.argsort(-lp)
    top = {int(t): float(lp[t]) for t in order[:20]}
    exact1 = processed.full(lp, int(order[0]), Sampling(1.0))
    got1 = processed.top_k(top, int(order[0]), 500, Sampling(1.0))
    assert got1.bound == pytest.approx(0.0, abs=1e-12) and got1.probs == pytest.approx(exact1.probs)
    for t in (0.5, 1.5):
        exact = processed.full(lp, int(order[1]), Sampling(t))
        got = processed.top_k(top, int(order[1]), 500, Sampling(t))
        assert got.observed == 1 and got.bound > 0
        assert max(abs(a - b) for a, b in zip(got.probs, exact.probs)) <= got.bound + 1e-12
    cut = processed.top_k(top, int(order[0]), 500, Sampling(0.5, top_k=5))  # top-k inside K: the tail is cut
    assert cut.bound == 0.0 and cut.probs == pytest.approx(processed.full(lp, int(order[0]), Sampling(0.5, top_k=5)).probs)


def test_scoring_skips_each_outputs_first_token_and_reads_the_full_vocabulary():
    vocab = 6
    lp = {t: math.log(p) for t, p in enumerate([0.4, 0.3, 0.1, 0.1, 0.05, 0.05])}
    item = Scored([1, 2], [3, 0, 1])  # prompt 2 tokens, output 3: two scored tokens (0 and 1)
    rows = [None, lp, lp, lp, lp]
    got = contexts(item, rows, vocab, Sampling(1.0))
    assert [c.observed for c in got] == [0, 1] and got[0].probs == pytest.approx((0.4, 0.3, 0.3))
    with pytest.raises(ValueError):
        contexts(item, rows[:3], vocab, Sampling(1.0))


def test_the_test_passes_a_lossless_run_and_finds_a_sharpened_one():
    target = simulate.Target.make()
    s = Sampling(0.8)
    rng = np.random.default_rng(1)
    a, b = simulate.run(target, s, 32, 16, rng), simulate.run(target, s, 32, 16, rng)
    _, p, crit = conditioned.p_value(a.run, b.run, seed=0, draws=2000, level=0.01)
    assert p > 0.01 and crit > 0
    sharp = simulate.run(target, s, 32, 16, rng, eps=0.5, direction="sharp")
    assert conditioned.p_value(sharp.run, b.run, seed=0, draws=2000)[1] < 0.001


def test_the_record_entry_says_what_was_tested():
    target = simulate.Target.make()
    s = Sampling(0.8, top_p=0.9)
    rng = np.random.default_rng(2)
    a, b = simulate.run(target, s, 16, 8, rng), simulate.run(target, s, 16, 8, rng)
    to = lambda r: [processed.Context(tuple(p), int(o)) for p, o in zip(r.probs, r.observed)]  # noqa: E731
    from llama4spec.lossless.settings import Settings

    entry = check.context_test(Settings(top_p=0.9), 0.8, to(a.run), to(b.run), 16, 0.01, seed=0)
    assert entry.test == check.CONTEXT and entry.sampling == {"temperature": 0.8, "top_p": 0.9, "top_k": -1}
    assert sum(entry.counts) == 16 * 7 and entry.control["tokens"] == [112, 112]
    assert entry.detectable is None or 0 < entry.detectable <= 1
    import json

    json.dumps(check.as_dict(entry), allow_nan=False)


def test_the_simulation_holds_the_level_and_the_stated_power():
    """1,000 simulated checks a row (distinct prompts, one sample each, a target whose distribution
    depends on the whole context): a lossless sampler rejected at about the level at most, the stated
    deviation found at least 80% of the time in each direction, and a test that conditions on the
    previous token alone rejecting a lossless sampler nearly always."""
    table = simulate.table(checks=1000, level=0.05)
    null, sharp, flat = table["lossless"], table["sharp"], table["flat"]
    assert null["rejected"] <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 1000), table
    assert sharp["rejected"] >= 0.8 and flat["rejected"] >= 0.8, table
    assert null["previous_only_rejected"] >= 0.5, table


@pytest.mark.parametrize("answer, named", [
    (b"not json", "did not answer with JSON"),
    (b'{"choices": [{"text": "w1 w2"}]}', "returned no output token ids"),
    (b'{"choices": [{"token_ids": [1, -2]}]}', "returned no output token ids"),
    (b'{"choices": [{"token_ids": [1, true]}]}', "returned no output token ids"),
    (b'{"choices": []}', "returned no output token ids"),
    (b"[" * 100000, "did not answer with JSON"),
])
def test_a_server_that_does_not_return_the_token_ids_is_named_with_the_fix(answer, named):
    from llama4spec.errors import UserError
    from llama4spec.lossless.served import token_ids

    with pytest.raises(UserError) as err:
        token_ids("http://127.0.0.1:8000", answer)
    (line,) = err.value.problems
    assert named in line and "vLLM 0.32 or newer" in line


def test_a_served_request_carries_its_seed_and_sampling_parameters():
    from llama4spec.lossless.served import Request, body, token_ids

    sent = body("m", Request([1, 2, 3], 8, 0.8, 0.9, -1, 42, True))
    assert sent["seed"] == 42 and sent["top_p"] == 0.9 and sent["prompt"] == [1, 2, 3] and sent["return_token_ids"]
    assert token_ids("u", b'{"choices": [{"token_ids": [5, 6]}]}') == [5, 6]
