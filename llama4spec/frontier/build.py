"""A sweep's frontier from its points: each setting's curve, each speculative curve against its
no-speculation curve (the one of the same other settings, else the sweep's only one), and what
cannot be drawn or compared, in sentences."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from llama4spec.stats.interval import CONFIDENCE
from llama4spec.stats.point import Point
from llama4spec.stats.noise import Noise
from llama4spec.frontier.compare import Versus, versus
from llama4spec.frontier.curve import Curve, curves, device_word


@dataclass(frozen=True)
class Frontier:
    curves: tuple[Curve, ...]
    comparisons: tuple[Versus, ...]
    device: str = "device"  # GPU when every server holds GPUs
    price: float | None = None  # per device-hour, as given
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def drawn(self) -> bool:
        """Some setting has two or more measured concurrencies: there is a curve."""
        return any(len(c.nodes) >= 2 for c in self.curves)


def frontier(points: Iterable[Point], configs: Mapping[str, Mapping[str, Any]], noise: Noise | None,
             margin: float | None = None, price: float | None = None, confidence: float = CONFIDENCE) -> Frontier:
    """The frontier of a sweep's points (``configs``: point id -> its config as config.yaml holds it)."""
    found = curves(points, configs)
    word = device_word(configs.values())
    if not found:
        return Frontier((), (), word, price, ("no frontier: no point has both a throughput and a TPOT",))
    if not any(len(c.nodes) >= 2 for c in found):
        return Frontier(tuple(found), (), word, price, (
            "no frontier: every setting was measured at one concurrency, and a curve needs two or more",))
    bases = [c for c in found if not c.speculative]
    notes, out = [], []
    for cand in (c for c in found if c.speculative):
        base = next((b for b in bases if b.group == cand.group), bases[0] if len(bases) == 1 else None)
        if base is None:
            notes.append(f"{cand.name}: no no-speculation setting to compare its frontier with")
            continue
        if len(cand.nodes) < 2 or len(base.nodes) < 2:
            notes.append(f"{cand.name} against {base.name}: one concurrency on a side, no curve to compare")
            continue
        if cand.devices != base.devices:
            notes.append(f"{cand.name} holds {_count(cand.devices, word)} and {base.name} "
                         f"{_count(base.devices, word)}: they are compared per {word}")
        v = versus(cand, base, noise, confidence, margin)
        if v.overlap is None:
            notes.append(f"{cand.name} and {base.name} reach no common per-user speed: no ratio (their speeds: "
                         f"{_span(cand)} and {_span(base)} tok/s)")
            continue
        out.append(v)
    return Frontier(tuple(found), tuple(out), word, price, tuple(notes))


def _count(devices: tuple[int, ...], word: str) -> str:
    return f"{'/'.join(map(str, devices))} {word}{'s' if devices != (1,) else ''} a server"


def _span(c: Curve) -> str:
    low, high = c.span
    return f"{low:.3g}-{high:.3g}"
