"""The sweep's designs by name: the expansion (``expand``) runs them in the order of their phase,
each where it applies (``Design.of``). A new design: its module (a ``design.Design`` subclass)
and its line here."""

from __future__ import annotations

from llama4spec.sweep.design import Design
from llama4spec.sweep.design_auto import Auto
from llama4spec.sweep.design_interleaved import Interleaved
from llama4spec.sweep.design_revisit import RevisitPass
from llama4spec.sweep.design_schedule import SchedulePhase
from llama4spec.sweep.design_sequential import Sequential
from llama4spec.sweep.design_starts import RepeatedStarts

# in the order of the design: key's values (the first: its default), then the designs keys turn on
REGISTRY: dict[str, type[Design]] = {cls.name: cls for cls in (
    Auto, Sequential, Interleaved, RepeatedStarts, RevisitPass, SchedulePhase,
)}
DESIGNS = tuple(name for name, cls in REGISTRY.items() if cls.choice)  # a sweep's design: key
# keys that act only in one design: written in a sweep of another, they would do nothing
DESIGN_KEYS = {name: cls.own_keys for name, cls in REGISTRY.items() if cls.own_keys}


def in_phase_order() -> list[type[Design]]:
    """The registered designs in the order the expansion runs them."""
    return sorted(REGISTRY.values(), key=lambda cls: cls.phase)
