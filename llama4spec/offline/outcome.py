"""What an offline run yields and who watches it: each engine's pass over the prompts (``EngineRun``),
what the run found for its tables (``Outcome``) and the ``Reporter`` it tells as it runs."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from llama4spec.analysis.categories import CategoryStat
from llama4spec.config.schema import Config
from llama4spec.offline.prompts import Prompts
from llama4spec.results.acceptance import RequestSteps, RunStats
from llama4spec.results.offline_record import CategoryRun, TemperatureRun


@dataclass
class EngineRun:
    """One engine's pass over the prompts."""

    label: str
    stats: RunStats
    token_ids: list[list[int]]
    texts: list[str]
    engine_start_s: float
    categories: list[CategoryRun] = field(default_factory=list)  # offline.by_category only
    temperatures: list[TemperatureRun] = field(default_factory=list)  # offline.temperatures only
    requests_match_counters: bool | None = None  # offline.temperatures: per-request sums == counter deltas
    seeds: list[int] = field(default_factory=list)  # each request's sampling seed, in output order
    steps: list[RequestSteps] = field(default_factory=list)  # each request's verify steps (with a draft)
    async_scheduling: bool | None = None  # as the engine resolved it (vLLM's scheduler config)


@dataclass
class Outcome:
    """What an offline run found, for its tables: the passes (the run's, then its baseline's),
    each category's figures, and the greedy check (``identical`` None: not made)."""

    runs: list[EngineRun]
    categories: list[CategoryStat]
    identical: bool | None = None
    difference: tuple[int, int] | None = None  # (prompt, token) where greedy outputs first differ
    pinned: str | None = None  # how async scheduling was pinned for the comparison, if it was


class Reporter(Protocol):
    """What an offline run shows while it runs (``offline.display.OfflineDisplay`` draws it with
    Rich). The run calls every method; the reporter decides what its verbosity shows."""

    def header(self, cfg: Config, prompts: Prompts) -> None:
        """Before the first engine starts: what is about to run."""

    def starting(self, label: str) -> AbstractContextManager[Any]:
        """Held while the ``label`` engine starts (its processes start inside)."""

    def progress(self, label: str, category: str) -> Callable[..., Any] | bool:
        """vLLM's ``use_tqdm`` for one batch of the ``label`` pass (``category`` "": all prompts)."""

    def engine_failed(self, log: Path, tail: list[str]) -> None:
        """An engine failed while its noise went to ``log``; ``tail``: the log's last lines."""

    def finished(self, outcome: Outcome) -> None:
        """Every pass is done: the results."""

    def recorded(self, path: Path) -> None:
        """The run record is written to ``path``."""
