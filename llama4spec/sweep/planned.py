"""What a sweep's expansion produces besides its steps (``SweepPlan``, on the sweep step as
``Step.expanded``): the design it took and why, the points, the order of its starts, the pairs a
block, the noise its comparisons start from (set when it is planned). The sweep's ``Keys`` hold what
the runbook says; ``design_record`` reads both."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llama4spec.runbook.fields import AUTO
from llama4spec.sweep.rule import BLOCK_RUNS

AUTO_DESIGN, SEQUENTIAL, INTERLEAVED = "auto", "sequential", "interleaved"  # the values of a sweep's design: key
GAP_S = 2.0  # interleaved: the least pause between one server's last request and the other's run, by default


@dataclass
class SweepPlan:
    """A sweep step's plan-time state, generated while it expands and is planned."""

    fallback: str | None = None  # why an interleaved sweep is measured sequentially here
    chosen: str | None = None  # design: auto: the design it took (sequential or interleaved)
    auto_why: str | None = None  # design: auto: why it took the sequential design
    async_pinned: str | None = None  # async scheduling pinned off on every server, and why
    prior: dict[str, Any] | None = None  # the noise its comparisons start from (``noise_record``)
    points: list[str] = field(default_factory=list)  # the bench steps it expands to
    start_order: list[str] = field(default_factory=list)  # starts: its serve steps in the order they run
    block_runs: int | None = None  # back-to-back blocks: the pairs of runs a block
    block_why: str | None = None  # repeats: auto: why a profile's costs set block_runs

    def design_record(self, keys: Any) -> dict[str, Any]:
        """How the sweep (its ``keys``: the sweep kind's Keys) measured its pairs (plan.json,
        sweep.json, the report)."""
        used = INTERLEAVED if (self.chosen or keys.design) == INTERLEAVED and not self.fallback else SEQUENTIAL
        out: dict[str, Any] = {"design": used, "asked": keys.design, "margin": keys.margin}
        if self.auto_why:
            out["auto"] = self.auto_why
        if keys.precision is not None:
            out["precision"] = keys.precision
        if self.prior is not None:
            out["noise_prior"] = self.prior
        if self.fallback:
            out["fallback"] = self.fallback
        if self.async_pinned:
            out["async_scheduling"] = self.async_pinned
        auto = keys.repeats == AUTO
        blocks = used == INTERLEAVED and (keys.starts > 1 or auto)
        if keys.starts > 1 and not blocks:
            out["starts"] = {"starts": keys.starts, "order_seed": keys.order_seed, "order": list(self.start_order)}
        unused = unused_design_keys(keys, used)
        if unused:
            out["unused"] = unused
        if used == INTERLEAVED:
            first, second = ("candidates", "no speculation") if keys.swap_devices else ("no speculation", "candidates")
            out.update(gap_s=keys.gap_s, swap_devices=keys.swap_devices,
                       devices=f"a fixed factor: {first} on the first half of the devices, {second} on the second")
        if blocks:
            out["blocks"] = {"blocks": AUTO if auto else keys.starts, "runs": self.block_runs or keys.repeats,
                             "order_seed": keys.order_seed, "order": list(self.start_order)}
            if auto:  # scalars, so that a merge's report reads them too
                out.update(min_blocks=keys.rule.min_repeats, max_blocks=keys.rule.max_repeats,
                           confidence=keys.rule.confidence)
                out["blocks"]["runs_why"] = self.block_why or (f"{BLOCK_RUNS} pairs a block by default; a noise "
                                                               f"profile's costs set them")
            out["devices"] = (f"crossed over: {first} on the first half of the devices in block 1, {second} there in "
                              f"block 2, and so on (swap_devices: true swaps block 1's)")
        return out


def unused_design_keys(keys: Any, used: str) -> str | None:
    """Keys of the interleaved design set on a sweep measured sequentially (design: auto that took
    it, or interleaved where two copies do not fit), in one sentence: they do nothing there."""
    set_ = [*([f"gap_s: {keys.gap_s:g}"] if keys.gap_s != GAP_S else []),
            *(["swap_devices: true"] if keys.swap_devices else [])]
    if used != SEQUENTIAL or not set_:
        return None
    return (f"{', '.join(set_)} act{'s' if len(set_) == 1 else ''} only in the interleaved design, and this sweep "
            f"is measured sequentially (the design above says why): {'it is' if len(set_) == 1 else 'they are'} "
            f"not used")


def design_of(step: Any) -> dict[str, Any]:
    """A sweep step's design record (``SweepPlan.design_record``), from its keys and what its
    expansion produced (a sweep not expanded: its keys alone)."""
    return (step.expanded or SweepPlan()).design_record(step.keys)
