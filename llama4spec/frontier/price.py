"""The price of a million output tokens from a device-hour price (``price:`` on a sweep step,
``--gpu-hour-price`` on ``sweep``; read by ``runbook.fields.number``: a number from 0 up to
``MAX_PRICE``). No price is shipped as a fact: the user gives it, in a currency of their own.

A device at ``t`` output tok/s makes 3600 t tokens an hour, so a million tokens cost
``price x 1e6 / (3600 t)``."""

from __future__ import annotations

import math

MAX_PRICE = 1e6  # a device-hour price above this is a typo


def per_million(price: float, tokens_per_s: float) -> float:
    """The price of a million output tokens at ``tokens_per_s`` per device (inf at 0 tok/s)."""
    return math.inf if tokens_per_s <= 0 else price * 1e6 / (3600.0 * tokens_per_s)
