"""What every design of a sweep's expansion shares while it writes the steps (``expand``): the step
ids in use and the one clash to report, the servers' names, the sweep's points so far, a server's
bench steps and its settle step, the stop step the next server starts after, and the servers of the
first pass (a revisit's). Each design (``registry``) appends its steps to one ``Expansion``.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any

from llama4spec.runbook.fields import AUTO
from llama4spec.runbook.matrix import Make, ServerGroup, bounded_id, file_label, is_client_axis
from llama4spec.runbook.spec import Step
from llama4spec.sweep.planned import SweepPlan


@dataclass(frozen=True)
class Started:
    """A server of the first pass: its step id, its overrides, its points (what a revisit starts again)."""

    sid: str
    overrides: list[str]
    points: list[str]


@dataclass
class Expansion:
    """One sweep step being expanded: what its designs have written so far (``out``, ``points``)
    and the ids they took (``taken``: the file's and those generated so far)."""

    step: Step  # the sweep step (its keys as the expansion refined them: design: auto's starts)
    make: Make
    taken: set[str]
    server_axes: list[str]
    client_axes: list[str]
    client_combos: list[tuple[str, ...]]
    client_labels: list[str]
    out: list[Step] = field(default_factory=list)
    points: list[str] = field(default_factory=list)  # the sweep's bench steps, in the order measured
    previous_stop: str | None = None  # the stop step the next server starts after (None: the sweep's own needs)
    names: set[str] = field(default_factory=set)  # servers' names given so far
    clash: str | None = None  # the first generated id already in use
    first_pass: list[Started] = field(default_factory=list)  # the sequential design's servers (a revisit's)
    plan: SweepPlan = field(default_factory=SweepPlan)  # what it produces besides steps (the sweep's Step.expanded)

    @classmethod
    def of(cls, step: Step, make: Make, taken: set[str], matrix: dict[str, list[str]]) -> "Expansion":
        client_axes = [a for a in matrix if is_client_axis(a)]
        combos = list(itertools.product(*(matrix[a] for a in client_axes)))
        labels = ["-".join(file_label(a, v) for a, v in zip(client_axes, combo)) for combo in combos]
        return cls(step, make, taken, [a for a in matrix if not is_client_axis(a)], client_axes, combos, labels)

    @property
    def keys(self) -> Any:
        return self.step.keys

    def refine(self, **changes: Any) -> None:
        """Set keys of the sweep step as the expansion takes them (``starts``, for design: auto)."""
        self.step = dataclasses.replace(self.step, keys=dataclasses.replace(self.keys, **changes))

    def needs(self) -> list[str]:
        """What the next server starts after: the last stop, or the sweep's own needs."""
        return [self.previous_stop] if self.previous_stop else list(self.step.needs)

    def new_id(self, text: str) -> str:
        sid = bounded_id(text)
        if sid in self.taken and self.clash is None:
            self.clash = sid
        self.taken.add(sid)
        return sid

    def server_id(self, n: int, group: ServerGroup) -> tuple[str, str]:
        """A server's step id and what it serves, from the axes constant over its combinations."""
        constant = group.constant(self.server_axes)
        name = "-".join(file_label(a, v) for a, v in constant) or "server"
        if name in self.names:
            base, k = name, n
            while name in self.names:
                name, k = f"{base}-{k}", k + 1
        self.names.add(name)
        return self.new_id(f"{self.step.id}-{name}"), " ".join(f"{a}={v}" for a, v in constant) or "the sweep's server"

    def bench_id(self, sid: str, label: str) -> str:
        return self.new_id(f"{sid}-{label}" if self.client_axes else f"{sid}-bench")

    def measured_by(self, sid: str) -> list[Step]:
        """A server's points (one per client combination, added to ``points``), then their settle step."""
        earlier = list(self.points)
        steps = []
        for combo, label in zip(self.client_combos, self.client_labels):
            bid = self.bench_id(sid, label)
            steps.append(self.point(bid, sid, combo))
            self.points.append(bid)
        return steps + self.settle(sid, self.points[len(earlier):], earlier)

    def point(self, bid: str, server: str, combo: tuple[str, ...]) -> Step:
        """A bench step of a sweep: one client-side combination against one of its servers."""
        keys = self.keys
        auto = keys.repeats == AUTO  # measured until decided: min_repeats here, the rest by the server's settle step
        return self.make("bench", bid, server=server, label=bid, extra_args=list(keys.extra_args),
                         overrides=[f"{a}={v}" for a, v in zip(self.client_axes, combo)],
                         repeats=keys.rule.min_repeats if auto else keys.repeats, warmup=keys.warmup)

    def settle(self, server: str, mine: list[str], earlier: list[str]) -> list[Step]:
        """With repeats: auto, the step that gives a server's points further runs, one at a time, until
        their comparisons with the points measured before them are decided (none otherwise)."""
        if self.keys.repeats != AUTO or not mine:
            return []
        return [self.make("settle", self.new_id(f"{server}-settle"), server=server, points=list(mine),
                          earlier=list(earlier), rule=self.keys.rule)]

    def stop(self, sid: str) -> None:
        """The stop step of server ``sid``; the next server starts after it."""
        self.previous_stop = self.new_id(f"{sid}-stop")
        self.out.append(self.make("stop", self.previous_stop, server=sid))
