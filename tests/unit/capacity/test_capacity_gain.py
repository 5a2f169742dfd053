"""Request capacity across settings: the gain over no speculation, its conservative interval, the
sentences."""

from __future__ import annotations

import pytest

from llama4spec.capacity.answer import Capacity
from llama4spec.capacity.gain import binding_clauses, describe, gain, headline as headline_of


def headline(caps, baseline, slo):
    """The headline of bisecting searches' capacities: each gain over ``baseline``."""
    gains = {n: gain(c, caps[baseline]) for n, c in caps.items() if n != baseline}
    return headline_of(gains, {n: c.binding for n, c in caps.items()}, baseline, slo)


def _cap(rate, high, binding="tpot", **more):
    return Capacity(rate, high, 30.0 * rate if rate else None, binding, True, "stopped", **more)


BASE = _cap(10.0, 16.2 / 1.41)
K3 = _cap(16.2, 18.0)
K5 = _cap(12.0, 13.0, "ttft")


def test_gain_is_the_ratio_of_capacities_within_the_extremes_of_both_intervals():
    g = gain(K3, BASE)
    assert g.ratio == pytest.approx(1.62) and g.low == pytest.approx(1.41) and g.high == pytest.approx(1.80)
    assert g.low <= g.ratio <= g.high


def test_the_answer_in_one_sentence():
    text = headline({"no speculation": BASE, "EAGLE k=3": K3, "k=5": K5}, "no speculation", "interactive")
    assert text == ("EAGLE k=3 carries 1.62x [1.41, 1.80] the requests of no speculation under slo=interactive; "
                    "TTFT binds for k=5")
    same = headline({"no speculation": BASE, "k=3": K3}, "no speculation", "batch")
    assert same.endswith("; TPOT binds for k=3")
    assert headline({"no speculation": BASE}, "no speculation", "interactive") is None


def test_censored_capacities_have_open_ends():
    never_failed = _cap(10_000.0, None)
    g = gain(never_failed, BASE)
    assert g.high is None and g.ratio == pytest.approx(1000.0)
    nowhere = _cap(None, 0.01)
    assert gain(nowhere, BASE).ratio is None and gain(nowhere, BASE).low == 0.0
    assert "no upper bound" in headline({"b": BASE, "fast": never_failed}, "b", "interactive")


def test_binding_clauses_group_settings():
    assert binding_clauses({"no speculation": BASE.binding, "k=1": BASE.binding, "k=5": K5.binding}) == [
        "TPOT binds for no speculation and k=1", "TTFT binds for k=5"]


def test_describe_one_server():
    assert describe("k=3", K3) == "k=3: request capacity 16.2 req/s [16.2, 18], 486 output tok/s; TPOT binds"
    cliff = _cap(3.363, 3.512, cliff=(3.512, 5.268), notes=["cliff: the SLO failed at 3.512 req/s but held at 5.268 req/s"])
    assert describe("k=1", cliff).endswith("; cliff: the SLO failed at 3.512 req/s but held at 5.268 req/s")
    assert describe("k=9", _cap(None, 0.01)) == "k=9: the SLO held at no rate probed (below 0.01 req/s); TPOT binds"
    running = Capacity(4.0, 8.0, None, None, False, "between 4, which held, and 8, which failed")
    assert describe("k=1", running) == ("k=1: request capacity 4 req/s [4, 8] (so far; between 4, which held, "
                                        "and 8, which failed)")
