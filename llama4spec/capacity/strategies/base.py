"""A capacity search as a strategy (after GuideLLM's benchmark profiles: one class per search,
registered by its type name): frozen arguments (the capacity step's ``Settings`` and the SLO's
attainment), the state it steps (an ``capacity.probing.Search``: its probes alone, which
search.json records for every strategy), the next move and its stop reason. The search step looks
a strategy up by the ``search`` key (``of``) and never asks which one it has."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from llama4spec.capacity import probing as cap

REGISTRY: dict[str, type[Strategy]] = {}


@dataclass(frozen=True)
class Strategy:
    """One capacity search. A subclass names itself (``name``), its place among the ``search`` key's
    choices (``rank``: the first is the default), the ``Settings`` fields it reads (``reads``) and its
    default precision; its module registers it (``register``)."""

    settings: Any  # the capacity step's Settings (capacity.search_settings), whole
    target: float = 0.95  # the SLO's attainment

    name: ClassVar[str] = ""
    rank: ClassVar[int] = 0
    reads: ClassVar[frozenset[str]] = frozenset()
    precision: ClassVar[float] = cap.PRECISION

    @property
    def record(self) -> cap.Settings:
        """The settings search.json records (those of a search by verdicts, for every strategy)."""
        return self.settings.bisect(self.target)

    def problems(self) -> list[str]:
        """Every problem of the settings as this search reads them, one line each."""
        raise NotImplementedError

    def move(self, search: cap.Search) -> tuple[float | None, str]:
        """The next run's rate (None: the search is over) and why (or why it stopped)."""
        raise NotImplementedError

    def add(self, search: cap.Search, rate: float, run: cap.Run, why: str) -> cap.Search:
        """The search with ``run``, measured at ``rate`` (chosen for ``why``), added."""
        raise NotImplementedError

    def stop(self, search: cap.Search) -> str | None:
        """Why the search stopped; None while it goes on."""
        rate, why = self.move(search)
        return why if rate is None else None

    def document(self, search: cap.Search) -> dict[str, Any]:
        """What this search adds to search.json beside its probes (nothing, unless it says)."""
        return {}

    def result(self, search: cap.Search) -> tuple[str, dict[str, Any]]:
        """The answer, in words and as the step's result (without the thresholds)."""
        raise NotImplementedError

    def plan_words(self) -> str:
        """How it goes on once the doubling found a failure (the dry run's words)."""
        raise NotImplementedError

    def runs(self) -> tuple[int, int]:
        """The fewest and the most runs the search makes."""
        raise NotImplementedError


def register(strategy: type[Strategy]) -> None:
    """Make ``strategy`` the search its ``name`` names (a runbook's ``search: <name>``)."""
    REGISTRY[strategy.name] = strategy


def names() -> tuple[str, ...]:
    """The registered searches' names, the default first."""
    return tuple(sorted(REGISTRY, key=lambda n: REGISTRY[n].rank))


def of(settings: Any, target: float = 0.95) -> Strategy:
    """The search ``settings.search`` names, under the SLO's attainment ``target``."""
    return REGISTRY[settings.search](settings, target)
