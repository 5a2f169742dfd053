"""A sweep setting's frontier: output throughput per device against per-user output speed, one node
per measured concurrency.

A node's per-user speed is 1000 / its TPOT in ms: the median over its counted runs of each run's
median TPOT (vLLM's ``median_tpot_ms``, P50 over the run's requests), or of its mean TPOT where a
sweep's records carry no median. Its throughput per device is its runs' output throughput over the
devices its server holds (tensor x pipeline x data parallel size; a CPU server counts as one), so
settings of different device counts compare per device. The frontier keeps the nodes no other node
of the setting beats on both axes (a node with a higher speed and more tokens per device dominates
it), ordered by speed; between neighbouring nodes it is linear in log speed and log throughput.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from llama4spec.stats.point import Point, runs, server_starts
from llama4spec.analysis.points import dotted

MEDIAN, MEAN = "median_tpot_ms", "mean_tpot_ms"
TPOT_WORDS = {MEDIAN: "median TPOT (P50 over each run's requests)", MEAN: "mean TPOT (the records hold no median)"}


def devices(config: Mapping[str, Any]) -> int:
    """The devices a point's server holds: its world size (tensor x pipeline x data parallel, over all
    its nodes); a CPU server one (``cost.model.devices``, on a config as its config.yaml holds it)."""
    if str(dotted(config, "hardware.device") or "cpu") == "cpu":
        return 1
    sizes = [dotted(config, f"parallel.{k}_parallel_size") for k in ("tensor", "pipeline", "data")]
    return max(1, math.prod(int(s) if isinstance(s, int) and not isinstance(s, bool) and s > 0 else 1 for s in sizes))


def device_word(configs: Iterable[Mapping[str, Any]]) -> str:
    """``GPU`` when every server of the sweep holds GPUs, else ``device`` (a CPU server counts as one)."""
    kinds = {str(dotted(c, "hardware.device") or "cpu") for c in configs}
    return "GPU" if kinds and kinds <= {"cuda"} else "device"


@dataclass(frozen=True)
class Node:
    """One measured concurrency of a setting."""

    id: str
    concurrency: int
    devices: int
    tpot_ms: float  # the median over its runs of the TPOT statistic (``Curve.tpot``)
    runs: tuple[float, ...]  # its counted runs' output throughputs (tok/s)
    starts: tuple[int, ...] = ()  # each run's server start
    on_frontier: bool = True

    @property
    def speed(self) -> float:
        """Per-user output speed, tok/s: 1000 / TPOT (ms)."""
        return 1000.0 / self.tpot_ms

    @property
    def logs(self) -> np.ndarray:
        """Log output throughput per device of each run."""
        return np.log(np.asarray(self.runs, float) / self.devices)

    @property
    def per_device(self) -> float:
        """Output tok/s per device: the geometric mean of its runs (what the ratios compare)."""
        return float(np.exp(self.logs.mean()))

    @property
    def median_per_device(self) -> float:
        return float(np.median(self.runs)) / self.devices

    @property
    def pareto_x(self) -> float:
        """vLLM ``plot_pareto``'s x axis: output throughput / concurrency (median runs)."""
        return float(np.median(self.runs)) / max(self.concurrency, 1)

    def within(self) -> tuple[float, float] | None:
        """The variance of its mean log throughput and its df (None below 2 runs)."""
        n = len(self.runs)
        return (float(np.var(self.logs, ddof=1)) / n, n - 1) if n >= 2 else None


@dataclass(frozen=True)
class Curve:
    """One setting's nodes (every measured concurrency), by per-user speed ascending."""

    name: str
    speculative: bool
    group: tuple  # what pairs it with its no-speculation curve: the other varied keys, category, temperature
    nodes: tuple[Node, ...]
    tpot: str = MEDIAN

    @property
    def frontier(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.on_frontier)

    @property
    def span(self) -> tuple[float, float]:
        speeds = [n.speed for n in self.frontier]
        return min(speeds), max(speeds)

    @property
    def devices(self) -> tuple[int, ...]:
        return tuple(sorted({n.devices for n in self.nodes}))

    def weights(self, speed: float) -> list[tuple[Node, float]]:
        """The frontier nodes whose log throughputs make its value at ``speed``, each with its weight
        (linear in log speed between the two neighbours; one node at a measured speed); [] outside."""
        nodes = self.frontier
        low, high = self.span
        if not low * (1 - 1e-9) <= speed <= high * (1 + 1e-9):
            return []
        for a, b in zip(nodes, nodes[1:]):
            if a.speed <= speed <= b.speed:
                if math.isclose(a.speed, b.speed):
                    return [(a, 1.0)]
                w = math.log(speed / a.speed) / math.log(b.speed / a.speed)
                return [(a, 1.0 - w), (b, w)] if 0 < w < 1 else [(a if w <= 0 else b, 1.0)]
        return [(min(nodes, key=lambda n: abs(math.log(n.speed / speed))), 1.0)]

    def log_at(self, speed: float) -> float | None:
        """Log throughput per device at ``speed`` (None outside its span)."""
        w = self.weights(speed)
        return sum(weight * float(n.logs.mean()) for n, weight in w) if w else None


def pareto(nodes: Sequence[Node]) -> tuple[Node, ...]:
    """``nodes`` by speed ascending, each marked off the frontier when another is at least as fast per
    user and gives at least as many tokens per device, one of them strictly more."""
    out = []
    for n in nodes:
        beaten = any(o is not n and o.speed >= n.speed and o.per_device >= n.per_device
                     and (o.speed > n.speed or o.per_device > n.per_device) for o in nodes)
        out.append(Node(n.id, n.concurrency, n.devices, n.tpot_ms, n.runs, n.starts, not beaten))
    return tuple(sorted(out, key=lambda n: (n.speed, n.concurrency)))


def tpot_statistic(points: Sequence[Point]) -> str:
    """The median TPOT where every point's runs record one, else the mean: one statistic a sweep."""
    return MEDIAN if points and all(p.samples.get(MEDIAN) for p in points) else MEAN


def _tpot(p: Point, key: str) -> float | None:
    values = [v for v in p.samples.get(key) or ((p.mean_tpot_ms,) if key == MEAN else ()) if v is not None]
    values = [float(v) for v in values if 0 < v < math.inf]
    return float(np.median(values)) if values else None


def curves(points: Iterable[Point], configs: Mapping[str, Mapping[str, Any]]) -> list[Curve]:
    """Each setting's curve from a sweep's points (``configs``: point id -> its config, for its
    devices). A point without a positive throughput or TPOT is left out of its curve."""
    points = [p for p in points if not p.scheduled]
    key = tpot_statistic(points)
    by: dict[tuple, list[Node]] = {}
    named: dict[tuple, Point] = {}
    for p in points:
        tpot, values = _tpot(p, key), [v for v in runs(p) if v is not None and 0 < v < math.inf]
        if tpot is None or not values:
            continue
        group = (p.varied, p.category, p.temperature)
        setting = (p.name, *group)
        if any(n.concurrency == p.concurrency for n in by.get(setting, [])):  # another server of one name
            setting = (f"{p.name} ({p.id.rsplit('-c', 1)[0]})", *group)
        named.setdefault(setting, p)
        starts = tuple(server_starts(p)) if len(server_starts(p)) == len(values) else ()
        by.setdefault(setting, []).append(Node(p.id, p.concurrency, devices(configs.get(p.id) or {}), tpot,
                                               tuple(values), starts))
    return [Curve(_name(named[s], s[0]), named[s].speculative, s[1:], pareto(nodes), key) for s, nodes in by.items()]


def _name(p: Point, name: str) -> str:
    extra = [f"category {p.category}"] if p.category else []
    extra += [f"temperature {p.temperature:g}"] if p.temperature else []
    return name + (f" ({', '.join(extra)})" if extra else "")
