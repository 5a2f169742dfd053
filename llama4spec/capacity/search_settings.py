"""A capacity search's settings, declared once: each field is a key of the ``capacity`` step (its
name, type, default, bounds and reader), its help text and whether ``llama4spec capacity`` offers it
as a flag (``--start-rate`` for ``start_rate``). The capacity step reads them as one ``Settings``
and carries that object whole into every ``search`` step it generates; the searches' analysis
settings are made from it: the record's (``bisect``, what search.json keeps for every search) here,
each search's own by its strategy (``strategies``: each declares the fields it reads and its own
problems). A new setting is one field here, and where the search uses it."""

from __future__ import annotations

from dataclasses import dataclass
from llama4spec.capacity import fit as cf
from llama4spec.capacity import probing as cap
from llama4spec.capacity.strategies.base import names, of
from llama4spec.runbook import fields
from llama4spec.runbook.fields import described


@dataclass(frozen=True)
class Settings:
    """One capacity search's settings, as the capacity step's runbook keys give them."""

    extra_args: list[str] = described(fields.texts(), "more `vllm bench serve` flags, for every probe", flag=False)
    start_rate: float = described(fields.number(1.0, 0, cap.MAX_RATE, above=True), "the first request rate probed",
                                  metavar="RPS")
    max_rate: float = described(fields.number(cap.MAX_RATE, 0, cap.MAX_RATE, above=True), "no probe above this rate",
                                metavar="RPS")
    min_rate: float = described(fields.number(cap.MIN_RATE, cap.MIN_RATE, cap.MAX_RATE),
                                "no probe below this rate: a setting that fails the SLO there is said to hold nowhere "
                                "above it (a probe sends at least the requests a verdict needs, so a low rate takes "
                                "long: about 31 requests / rate seconds)", metavar="RPS")
    search: str = described(fields.choice(*names()),
                            "fit: each run at the crossing of one curve of attainment against the rate fitted to every "
                            "run; bisect: a verdict at each rate, bisecting between them")
    precision: float | None = described(
        fields.number(None, 0.01, 1, optional=True),
        f"fit: stop when the capacity's 95% interval is within +-X of it (in (0, 1), default {cf.PRECISION:.2f}); "
        f"bisect: stop when the highest rate that holds is within X of the lowest that fails (default "
        f"{cap.PRECISION:.2f})", metavar="X")
    min_probe_runs: int = described(fields.count(cap.MIN_PROBE_RUNS, 2, cap.RUNS_CAP),
                                    "bisect: runs every probed rate gets", metavar="N")
    max_probe_runs: int = described(fields.count(cap.MAX_PROBE_RUNS, 2, cap.RUNS_CAP),
                                    "bisect: the most runs a probed rate gets", metavar="N")
    max_probes: int = described(fields.count(cap.MAX_PROBES, 1, cap.MAX_PROBES),
                                "fit: the most runs a search makes; bisect: the most rates it probes", metavar="N")
    duration_s: float = described(fields.number(30.0, 0, 3600.0, above=True),
                                  "each run sends at least S x rate requests", metavar="S")
    confirm: float | None = described(fields.number(cap.CONFIRM, 1, 100, above=True, optional=True),
                                      "bisect: after the search, one probe at X times the lowest failing rate checks "
                                      "for a cliff", metavar="X")
    confidence: float = described(fields.level(0.95), "of each verdict at one rate", flag=False)

    @property
    def stop_precision(self) -> float:
        """The precision the search stops at: the step's, else its search's default."""
        return self.precision or of(self).precision

    def bisect(self, target: float) -> cap.Settings:
        """The settings of a search by verdicts (and of every search's record), under the SLO's attainment."""
        return cap.Settings(start=self.start_rate, target=target, precision=self.stop_precision, cap=self.max_rate,
                            floor=self.min_rate, min_runs=self.min_probe_runs, max_runs=self.max_probe_runs, max_probes=self.max_probes,
                            confidence=self.confidence, confirm=self.confirm)

    def problems(self, target: float = 0.95) -> list[str]:
        """Every problem of the settings, as the step's search reads them (its strategy's ``problems``)."""
        return of(self, target).problems()
