"""What a planned step spends (``Work``: starts and runs, the least and the most) and what that costs
(``Cost``: starts, runs, wall time and device-hours, the least and the most). The least is every
question decided at its first look; the most is every cap reached.

Device-hours are devices x hours: a server or an engine holds its devices (tensor x pipeline x data
parallel size: the world size, over all its nodes; a CPU server counts as one device) from its start
until it stops, and every second of that time counts for each of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Work:
    """One planned step's share of the work; each pair is (least, most)."""

    starts: tuple[int, int] = (0, 0)  # server or engine starts
    runs: tuple[int, int] = (0, 0)  # benchmark runs (each counted run, each side of a pair)
    run_s: float | None = None  # the seconds a run takes where the step sets it (a capacity probe's duration)
    wait_s: float = 0.0  # the seconds each run also waits, not running (a pair's pause after the other server's run)
    devices: int = 0  # what the server or engine it starts holds
    holds: bool = False  # a server: its devices stay held until its stop step
    beside: bool = False  # started together with the server it is beside: its start adds no wall time
    engine: bool = False  # an engine in this process (offline, lossless), not a server
    uncounted: str | None = None  # what of it is not counted, and why

    @property
    def any(self) -> bool:
        return self.starts[1] > 0 or self.runs[1] > 0


NONE = Work()


class Seen(Protocol):
    """What a step's ``work`` hook may ask of the steps planned before it, in the order they run."""

    def work_of(self, step_id: str | None) -> Work | None: ...  # None: no such step before it
    def planned(self, step_id: str) -> Any: ...  # a planned step before it (runbook.plan.PlannedStep), or None


def devices(cfg: Any) -> int:
    """The devices a server of ``cfg`` holds: its world size (tensor x pipeline x data parallel, over
    all its nodes); a CPU server one."""
    if str(cfg.hardware.device) == "cpu":
        return 1
    p = cfg.parallel
    return max(1, int(p.tensor_parallel_size) * int(p.pipeline_parallel_size) * int(p.data_parallel_size or 1))


@dataclass(frozen=True)
class Rates:
    """What a server start and a benchmark run take, and where the figures come from."""

    start_s: float
    run_s: float
    source: str  # "profile PATH" or "hardware estimate NAME"
    estimate: bool  # not measured: a hardware config's recorded estimate
    note: str | None = None  # where the run time was measured (its concurrency)

    def record(self) -> dict[str, Any]:
        return {"start_s": self.start_s, "run_s": self.run_s, "source": self.source, "estimate": self.estimate,
                **({"note": self.note} if self.note else {})}


@dataclass
class Cost:
    """A step's or a runbook's cost: [least, most] of each figure."""

    starts: list[int] = field(default_factory=lambda: [0, 0])
    runs: list[int] = field(default_factory=lambda: [0, 0])
    wall_s: list[float] = field(default_factory=lambda: [0.0, 0.0])
    device_s: list[float] = field(default_factory=lambda: [0.0, 0.0])
    engines: bool = False  # some of its starts are engines (offline, lossless)
    servers: bool = False  # some are servers
    sources: list[Rates] = field(default_factory=list)
    uncounted: list[str] = field(default_factory=list)
    unit_s: float | None = None  # the least wall time of its first server's life (a block, or a start and its runs)
    unit_device_s: float | None = None
    unit_what: str = "server start"

    @property
    def device_h(self) -> tuple[float, float]:
        return self.device_s[0] / 3600, self.device_s[1] / 3600

    def spend(self, i: int, starts: int, runs: int, wall_s: float, device_s: float) -> None:
        """Add to the least (``i`` 0) or the most (1)."""
        self.starts[i] += starts
        self.runs[i] += runs
        self.wall_s[i] += wall_s
        self.device_s[i] += device_s

    def took(self, work: Work, rates: Rates | None) -> None:
        """Note what kind of start ``work`` makes and where its rates come from."""
        self.engines |= work.engine and work.starts[1] > 0
        self.servers |= not work.engine and work.starts[1] > 0
        if rates is not None and rates not in self.sources:
            self.sources.append(rates)
        if work.uncounted and work.uncounted not in self.uncounted:
            self.uncounted.append(work.uncounted)

    def merge(self, other: "Cost") -> None:
        for i in (0, 1):
            self.spend(i, other.starts[i], other.runs[i], other.wall_s[i], other.device_s[i])
        self.engines |= other.engines
        self.servers |= other.servers
        self.sources += [r for r in other.sources if r not in self.sources]
        self.uncounted += [u for u in other.uncounted if u not in self.uncounted]

    @property
    def any(self) -> bool:
        return self.starts[1] > 0 or self.runs[1] > 0

    def record(self) -> dict[str, Any]:
        """The figures as plan.json and ``--dry-run --json`` carry them."""
        return {"starts": list(self.starts), "runs": list(self.runs), "wall_s": [round(x, 1) for x in self.wall_s],
                "wall_h": [round(x / 3600, 3) for x in self.wall_s],
                "gpu_hours": [round(x, 3) for x in self.device_h],
                "start_kind": "engine" if self.engines and not self.servers else "server",
                "rates": [r.record() for r in self.sources], "uncounted": list(self.uncounted),
                "estimate": any(r.estimate for r in self.sources)}
