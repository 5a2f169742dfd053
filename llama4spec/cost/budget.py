"""A budget: wall time ("10 min", "2 h") or GPU-hours ("50 gpu-h"), read once, every mistake one line."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from llama4spec.errors import UserError
from llama4spec.files import shown

WALL, GPU = "wall", "gpu-h"
SECONDS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "mins": 60, "minute": 60,
           "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600, "d": 86400,
           "day": 86400, "days": 86400}
GPU_HOURS = {"gpu-h", "gpu-hour", "gpu-hours", "gpuh", "gpu-hr", "gpu-hrs", "device-h", "device-hours"}
MAX_SECONDS = 366 * 86400.0  # a year of wall time
MAX_GPU_HOURS = 1e7
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf(?:inity)?)"
FORM = re.compile(rf"\s*({NUMBER})?\s*([A-Za-z][A-Za-z-]*(?:\s+[A-Za-z]+)?)?\s*", re.IGNORECASE)
EXAMPLE = 'e.g. budget: "10 min", "2 h" or "50 gpu-h"'


@dataclass(frozen=True)
class Budget:
    """What an experiment may spend: ``amount`` seconds of wall time (``unit`` WALL) or GPU-hours (GPU)."""

    amount: float
    unit: str
    text: str  # as given

    def record(self) -> dict[str, Any]:
        return {"text": self.text, "unit": self.unit,
                **({"seconds": self.amount} if self.unit == WALL else {"gpu_hours": self.amount})}


def parse_budget(value: Any, where: str) -> Budget:
    """``value`` ("10 min", "2 h", "50 gpu-h") as a Budget; UserError in one line naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UserError(f"{where}: budget {shown(value)} is not a budget; give a wall time or GPU-hours, {EXAMPLE}")
    text = str(value).strip()
    found = FORM.fullmatch(text)
    amount = _amount(found.group(1)) if found and found.group(1) else None
    unit = (found.group(2) or "").lower().replace(" ", "-") if found else ""
    if found is None or amount is None:
        raise UserError(f"{where}: budget {shown(text)} does not start with a number; {EXAMPLE}")
    if not unit:
        raise UserError(f"{where}: budget {shown(text)} has no unit; say whether it is wall time or GPU-hours, "
                        f"{EXAMPLE}")
    if unit not in SECONDS and unit not in GPU_HOURS:
        raise UserError(f"{where}: budget {shown(text)}: '{unit}' is neither a time (s, min, h, d) nor GPU-hours "
                        f"(gpu-h); {EXAMPLE}")
    if math.isnan(amount) or math.isinf(amount) or amount <= 0:
        raise UserError(f"{where}: budget {shown(text)} must be a finite amount above 0; {EXAMPLE}")
    if unit in GPU_HOURS:
        if amount > MAX_GPU_HOURS:
            raise UserError(f"{where}: budget {shown(text)} is more than {MAX_GPU_HOURS:g} GPU-hours; give at most that")
        return Budget(amount, GPU, text)
    seconds = amount * SECONDS[unit]
    if seconds > MAX_SECONDS:
        raise UserError(f"{where}: budget {shown(text)} is more than a year of wall time; give at most 366 d")
    return Budget(seconds, WALL, text)


def _amount(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def budget_key(raw: Any, where: str, problems: list[str]) -> Budget | None:
    """A runbook's or a step's ``budget:`` key (None where it is not given); its problem, if any, in ``problems``."""
    if raw is None:
        return None
    try:
        return parse_budget(raw, where)
    except UserError as err:
        problems.extend(err.problems)
        return None
