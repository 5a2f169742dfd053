"""GPUs for a load (pure): how many servers (replicas) and devices a request rate needs under an SLO,
with and without the draft, from each setting's request capacity and its interval, and what the draft
saves; with a device-hour price, the price of a million output tokens at the capacity.

A server that holds the SLO up to ``c`` req/s carries a load of ``L`` req/s with ``ceil(L / c)``
replicas (the load spread evenly; a replica is one server with its ``devices``). The capacity's
interval [low, high] gives the replicas' interval [ceil(L / high), ceil(L / low)] (open above when the
setting held at no rate probed). Devices saved take the extremes of both intervals,
[devices_0 low - devices_k high, devices_0 high - devices_k low]: they hold whenever both capacity
intervals do (conservative, as the capacity gain's interval)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from llama4spec.frontier.price import per_million

MAX_LOAD = 1e6  # req/s: a load above this is a typo


@dataclass(frozen=True)
class Need:
    """What one setting needs for a load."""

    name: str
    devices_per_server: int
    replicas: int | None  # at the capacity's estimate (None: the SLO held at no rate probed)
    low: int | None  # at the capacity's upper bound (None: no upper bound: at least one replica)
    high: int | None  # at the capacity's lower bound (None: unbounded: the setting held nowhere)
    price: float | None = None  # a million output tokens at the capacity, with a device-hour price

    @property
    def devices(self) -> int | None:
        return None if self.replicas is None else self.replicas * self.devices_per_server

    def devices_between(self) -> tuple[int | None, int | None]:
        low = None if self.low is None else self.low * self.devices_per_server
        return low, None if self.high is None else self.high * self.devices_per_server


def replicas(load: float, capacity: float | None) -> int | None:
    """Servers that carry ``load`` req/s at ``capacity`` req/s each; None without a capacity."""
    if capacity is None or capacity <= 0 or not math.isfinite(capacity):
        return None
    return max(1, math.ceil(load / capacity - 1e-9))


def need(name: str, load: float, rate: float | None, low: float | None, high: float | None, devices: int,
         output_tps: float | None = None, price: float | None = None) -> Need:
    """``name``'s servers and devices for ``load`` req/s, at its capacity ``rate`` in [``low``, ``high``]
    (``high`` None: no upper bound) with ``devices`` a server; the price of a million output tokens at
    ``output_tps`` (a server's output tok/s at the capacity) when ``price`` is given."""
    cost = per_million(price, output_tps / devices) if price is not None and output_tps else None
    return Need(name, devices, replicas(load, rate), replicas(load, high) if high is not None else 1,
                replicas(load, low), cost)


def saved(setting: Need, baseline: Need) -> tuple[int | None, int | None, int | None]:
    """Devices ``setting`` saves against ``baseline`` for the same load: (estimate, low, high); None
    where a side is unbounded or unknown."""
    est = None if setting.devices is None or baseline.devices is None else baseline.devices - setting.devices
    s_low, s_high = setting.devices_between()
    b_low, b_high = baseline.devices_between()
    low = None if b_low is None or s_high is None else b_low - s_high
    high = None if b_high is None or s_low is None else b_high - s_low
    return est, low, high


def _range(low: int | None, high: int | None) -> str:
    return f"[{'?' if low is None else low}, {'no upper bound' if high is None else high}]"


def need_text(n: Need, load: float, word: str = "GPU") -> str:
    """``EAGLE k=3: 7 GPUs [6, 9] (7 servers of 1 GPU) for 12 req/s``; and its price when known."""
    plural = lambda k: f"{k} {word}{'s' if k != 1 else ''}"  # noqa: E731
    if n.devices is None:
        return f"{n.name}: no capacity under the SLO, so no number of {word}s carries {load:g} req/s"
    low, high = n.devices_between()
    text = (f"{n.name}: {plural(n.devices)} {_range(low, high)} ({n.replicas} server{'s' if n.replicas != 1 else ''} "
            f"of {plural(n.devices_per_server)}) for {load:g} req/s")
    return text + (f"; {n.price:.4g} a million output tokens at its capacity" if n.price is not None else "")


def saved_text(setting: Need, baseline: Need, word: str = "GPU") -> str:
    """``EAGLE k=3 saves 3 GPUs [1, 4] against no speculation``, or that it is unknown."""
    est, low, high = saved(setting, baseline)
    if est is None:
        return f"{setting.name} against {baseline.name}: the {word}s saved are unknown (a capacity is missing)"
    verb = "saves" if est >= 0 else "needs"
    return (f"{setting.name} {verb} {abs(est)} {word}{'s' if abs(est) != 1 else ''} "
            f"{'more ' if est < 0 else ''}{_range(low, high)} against {baseline.name}")
