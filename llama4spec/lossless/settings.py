"""The losslessness check's settings: one frozen object, read from a runbook step's keys or the
command line, and checked once."""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_TEMPERATURES = 8
MAX_SAMPLES = 4096


@dataclass(frozen=True)
class Settings:
    temperatures: tuple[float, ...] = (0.0, 0.6, 1.0)  # 0: greedy (identity); above 0: distributions
    samples: int = 64  # requests per temperature above 0
    level: float = 0.01  # the joint level: the chance that any test rejects a lossless engine
    wide_gap: float = 0.5  # nats: a greedy divergence where the target's top-2 gap is this wide is a defect
    top_p: float = 1.0  # above temperature 0: the nucleus every request samples from (1: off)
    top_k: int = -1  # above temperature 0: the top k tokens every request samples from (0 or -1: off)
    url: str | None = None  # the draft's side from a running server (seeded completions), not an engine here

    def sampling(self, temperature: float):
        """The sampling parameters of the requests (and the reference) at ``temperature`` > 0."""
        from llama4spec.lossless.processed import Sampling

        return Sampling(temperature, self.top_p, self.top_k)

    def described_sampling(self) -> str:
        """The sampling parameters beside the temperature, as a user writes them ('' when none)."""
        return ", ".join(sampling_words(self.top_p, self.top_k))


def sampling_words(top_p: float, top_k: float) -> list[str]:
    """The sampling parameters beside the temperature that are on, as a user writes them."""
    return ([f"top_p={top_p:g}"] if top_p < 1 else []) + ([f"top_k={top_k:g}"] if top_k > 0 else [])


def temperature_problems(values: object, where: str) -> list[str]:
    """Why ``values`` is not a list of temperatures (distinct finite numbers of 0 or more, a few)."""
    if not isinstance(values, (list, tuple)) or not values:
        return [f"{where}: give a list of temperatures, such as [0, 0.6, 1.0]"]
    out = []
    for t in values:
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            out.append(f"{where}: {t!r} is no temperature; give values of 0 (greedy) or more")
    if not out and len({float(t) for t in values}) < len(values):
        out.append(f"{where}: a temperature is given twice; give each once")
    if len(values) > MAX_TEMPERATURES:
        out.append(f"{where}: {len(values)} temperatures; give at most {MAX_TEMPERATURES}")
    return out
