"""Where the seconds of a start and a run come from: a noise profile's measured costs (noise.json,
``llama4spec calibrate``), else the hardware config's recorded estimates (``hardware.cost``),
marked as estimates until calibrated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama4spec.cost.model import Rates
from llama4spec.files import json_or_none, number, plain

MAX_S = 1e6


def from_profile(path: Path) -> Rates | None:
    """A profile's costs (None where it records none: the hardware estimate applies then). The
    profile itself is checked where it is planned (``runbook.noise_prior``)."""
    data, problem = json_or_none(Path(path))
    if problem or not isinstance(data, dict) or not isinstance(data.get("costs"), dict):
        return None
    costs = data["costs"]
    start_s, run_s = number(costs.get("start_s"), 0, MAX_S), number(costs.get("run_s"), 0, MAX_S)
    if start_s is None or run_s is None or run_s <= 0:
        return None
    fp = data.get("fingerprint") if isinstance(data.get("fingerprint"), dict) else {}
    c = number(fp.get("concurrency"), 1, 1e6)
    note = f"a run's time as measured at concurrency {c:g}" if c else None
    return Rates(start_s, run_s, f"from profile {plain(str(path), 120)}", False, note)


def from_hardware(hardware: Any) -> Rates | None:
    """The hardware config's recorded estimates (None where it records none)."""
    cost = getattr(hardware, "cost", None)
    start_s = number(getattr(cost, "start_s", None), 0, MAX_S)
    run_s = number(getattr(cost, "run_s", None), 0, MAX_S)
    if start_s is None or run_s is None or run_s <= 0:
        return None
    return Rates(start_s, run_s, f"hardware estimate {getattr(hardware, 'name', 'hardware')}, not calibrated", True)
