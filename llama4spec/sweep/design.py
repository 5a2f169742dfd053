"""What every design of a sweep is: a class registered by name in ``registry`` (``REGISTRY``), with
frozen arguments (what it reads from the sweep's keys, taken by ``of``), its own state and, where it
has one, its stop reason (why it measured nothing, or handed its servers to a later design); what
the expansion produces besides the steps: ``Expansion.plan`` (``planned.SweepPlan``). The
expansion (``expand``) runs the registered designs in the order of their ``phase``; each takes the
servers the designs before it left and returns those it leaves to the next."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Mapping

from llama4spec.runbook.matrix import ServerGroup
from llama4spec.runbook.spec import Runbook
from llama4spec.sweep.expansion import Expansion


@dataclass(frozen=True)
class Scope:
    """What a design reads beyond the sweep step: the runbook, its matrix, the command line's
    overrides, where an interleaved sweep reads its devices (``environ``), the problems found and
    where they are (``at``)."""

    runbook: Runbook
    matrix: dict[str, list[str]]
    cli: list[str]
    environ: Mapping[str, str] | None
    problems: list[str]
    at: str


@dataclass
class State:
    """A design's own state while the sweep expands: its stop reason, once it has one."""

    stop: str | None = None


@dataclass(frozen=True)
class Design:
    """One design of a sweep's expansion (a subclass per design, registered in ``registry``)."""

    name: ClassVar[str]
    phase: ClassVar[int]  # where it runs in the expansion (lower first)
    choice: ClassVar[bool] = False  # a value of the design: key (else it applies by its own keys)
    own_keys: ClassVar[tuple[str, ...]] = ()  # keys that act only in this design
    state: State = field(default_factory=State, compare=False, kw_only=True)  # its stop reason: state.stop

    @classmethod
    def of(cls, x: Expansion) -> Design | None:
        """The design with its arguments from ``x``'s keys, None where it does not apply to the sweep."""
        raise NotImplementedError

    def expand(self, x: Expansion, groups: list[ServerGroup], scope: Scope) -> list[ServerGroup]:
        """Its steps appended to ``x``; returns the servers it leaves to the designs after it."""
        raise NotImplementedError
