"""``search: bisect``: a verdict at each rate, bisecting between the highest that holds and the
lowest that fails (``capacity.probing``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama4spec.capacity import probing as cap
from llama4spec.capacity.answer import capacity
from llama4spec.capacity.strategies.base import Strategy, register


@dataclass(frozen=True)
class BisectSearch(Strategy):
    name = "bisect"
    rank = 1
    reads = frozenset({"start_rate", "max_rate", "min_rate", "precision", "min_probe_runs", "max_probe_runs",
                       "max_probes", "confirm", "confidence"})
    precision = cap.PRECISION

    def problems(self) -> list[str]:
        return cap.settings_problems(self.record)

    def move(self, search: cap.Search) -> tuple[float | None, str]:
        move = cap.move(search)
        return move.rate, move.reason

    def add(self, search: cap.Search, rate: float, run: cap.Run, why: str) -> cap.Search:
        return cap.record_run(search, rate, run)

    def result(self, search: cap.Search) -> tuple[str, dict[str, Any]]:
        answer = capacity(search)
        words = (f"      request capacity {answer.rate if answer.rate is not None else 'none'} req/s "
                 f"[{answer.rate}, {answer.high}] after {answer.probes} probes, {answer.runs} runs; {answer.stopped}")
        return words, {"capacity_rps": answer.rate, "high_rps": answer.high, "binding": answer.binding,
                       "probes": answer.probes, "runs": answer.runs}

    def plan_words(self) -> str:
        s = self.settings
        confirm = f", then one at {s.confirm:g}x the lowest failing rate (a cliff check)" if s.confirm else ""
        return (f"bisecting to {s.stop_precision:.0%}{confirm}; {s.min_probe_runs} to {s.max_probe_runs} runs "
                f"a probe, at most {s.max_probes} probes")

    def runs(self) -> tuple[int, int]:
        """A rate that holds and one that fails at the least, every probe at max_probe_runs (and the
        cliff check) at the most."""
        s = self.settings
        return 2 * s.min_probe_runs, s.max_probes * s.max_probe_runs + (s.max_probe_runs if s.confirm else 0)


register(BisectSearch)
