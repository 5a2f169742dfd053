"""GPUs for a load from request capacities (pure): replicas by ceiling, intervals from the capacity
intervals, devices saved conservative, the price of a million tokens at the capacity."""

from __future__ import annotations

import pytest

from llama4spec.frontier.load import need, need_text, replicas, saved, saved_text


@pytest.mark.parametrize("load,cap,want", [(12, 4, 3), (12.5, 4, 4), (1, 100, 1), (12, 4.0000000001, 3), (8, None, None)])
def test_replicas_are_the_ceiling_of_load_over_capacity(load, cap, want) -> None:
    assert replicas(load, cap) == want


def test_devices_and_their_interval_follow_the_capacity_interval() -> None:
    n = need("EAGLE k=3", 12.0, 4.0, 3.0, 6.0, devices=2)
    assert (n.replicas, n.devices, n.devices_between()) == (3, 6, (4, 8))
    open_top = need("x", 12.0, 4.0, 3.0, None, devices=1)
    assert open_top.devices_between() == (1, 4)
    assert "no upper bound" not in need_text(open_top, 12.0)


def test_saved_devices_take_the_extremes_of_both_intervals() -> None:
    base = need("no speculation", 12.0, 2.0, 1.5, 3.0, devices=1)  # 6 [4, 8]
    eagle = need("EAGLE k=3", 12.0, 4.0, 3.0, 6.0, devices=1)  # 3 [2, 4]
    assert saved(eagle, base) == (3, 0, 6)
    assert saved_text(eagle, base) == "EAGLE k=3 saves 3 GPUs [0, 6] against no speculation"
    nowhere = need("k=5", 12.0, None, None, 1.0, devices=1)
    assert saved(nowhere, base)[0] is None and "unknown" in saved_text(nowhere, base)


def test_the_price_is_per_device_at_the_capacity() -> None:
    n = need("x", 10.0, 5.0, 4.0, 6.0, devices=2, output_tps=720.0, price=3.6)
    assert n.price == pytest.approx(3.6 * 1e6 / (3600 * 360.0))
    assert "a million output tokens" in need_text(n, 10.0)
