"""Where a sweep measured until decided (``repeats: auto``) stands, from its records: each point's
decision, the run to measure next, and which points a revisit (``revisit: true``: another start of
their servers) still has to settle. Read by the settle steps and the revisit servers alike.

The questions and the choice of the next run are ``stats.sequential.allocate``'s (its error control:
any false verdict or elimination at one client setting with probability at most 1 - confidence).
Only the points measured before a step's server and its own enter, and only runs of the server
starts up to the step's own (``start``: the pass of the sweep, 1 the first), so decisions recomputed
from the records (``--resume``, ``llama4spec report``) are the ones taken while measuring.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from llama4spec.runbook.measured import measured_in_plan
from llama4spec.sweep.rule import Rule

NEEDS_START = "needs another server start"


@dataclass(frozen=True)
class Settling:
    """What a sequential step measures by (its generated keys): its points, against which, by the
    sweep's one ``Rule``, in which server start."""

    points: list[str]  # the server's bench steps
    earlier: list[str]  # the sweep's bench steps measured before them
    rule: Rule = Rule()  # the sweep's rule (min_repeats, max_repeats, confidence)
    start: int = 1  # the server start (pass of the sweep) these decisions are taken in
    prior: Any = None  # stats.noise.Noise: the noise its comparisons start from (None: its points' hardware's)

    @classmethod
    def of(cls, keys: Any) -> "Settling":
        return cls(list(keys.points), list(keys.earlier), keys.rule, getattr(keys, "start", 1))

    def noise(self, plan, runs: dict[str, list[float]], starts: dict[str, list[int]]):
        """The noise of its comparisons: ``prior``, else the one the plan of the step that generated
        its points recorded (a profile, or the hardware's), else its points' hardware config's, pooled
        with the estimate from the runs at hand (``stats.components.pooled``)."""
        from llama4spec.stats.components import pooled
        from llama4spec.stats.noise import noise_from_record
        from llama4spec.runbook.noise_prior import hardware_prior

        prior = self.prior
        if prior is None:
            mine = set(self.points)
            held = [q.step.expanded if q.step.expanded is not None else q.step.keys for q in plan.steps]
            prior = next((noise_from_record(h.prior) for h in held
                          if getattr(h, "prior", None) and mine <= set(getattr(h, "points", ()))), None)
        if prior is None:
            cfg = next((plan.get(pid).composed.cfg for pid in runs if plan.get(pid).composed is not None), None)
            prior = hardware_prior(cfg.hardware) if cfg is not None else None
        return pooled(prior, runs, starts)


@dataclass(frozen=True)
class Decision:
    """Where one point stands: its state (``sequential.STATES`` or NEEDS_START), runs, verdict."""

    state: str
    runs: int
    verdict: str | None
    speedup: Any = None  # stats.interval.Interval against no speculation, when there is one
    starts: int = 1  # the server starts its runs came from
    this_start: int = 0  # its runs in the step's own start
    rule: Rule = Rule()  # the rule it was decided by

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.state, "runs": self.runs}
        if self.verdict:
            out["verdict"] = self.verdict
        if self.starts > 1:
            out["starts"] = self.starts
        out["rule"] = self.rule.record()
        return out


def _client(p) -> tuple[str, ...]:
    """What makes two points comparable: the same client-side settings (concurrency, ...)."""
    return tuple(p.step.keys.overrides)


def _no_speculation(p) -> bool:
    return p.composed is not None and not p.composed.cfg.draft.method


def _groups(plan, at: Settling, upto: int):
    """Per client setting: (its members, their runs, their starts, the baseline), runs of starts
    up to ``upto`` only, at most max_repeats a point."""
    planned = {q.id for q in plan.steps}  # a launcher's group plans only its own points
    ids = [pid for pid in (*at.earlier, *at.points) if pid in planned]
    measured = measured_in_plan(plan, ids)
    groups: dict[tuple[str, ...], list[str]] = {}
    for pid in ids:
        groups.setdefault(_client(plan.get(pid)), []).append(pid)
    for members in groups.values():
        runs, starts = {}, {}
        for pid in members:
            if pid not in measured:
                continue
            record = measured[pid].record
            kept = [(x, s) for x, s in zip(record.samples("output_throughput"),
                                           record.sample_starts("output_throughput")) if s <= upto]
            kept = kept[: at.rule.max_repeats]
            if kept:
                runs[pid], starts[pid] = [x for x, _ in kept], [s for _, s in kept]
        if runs:
            base = next((pid for pid in runs if _no_speculation(plan.get(pid))), next(iter(runs)))
            yield members, runs, starts, base


def _allocate(runs, starts, base, at: Settling, noise):
    from llama4spec.stats.sequential import allocate
    from llama4spec.stats.statistic import LogRatio

    return allocate(runs, base, at.rule.min_repeats, at.rule.max_repeats, at.rule.confidence, LogRatio(noise), starts)


def decisions(plan, at: Settling) -> tuple[dict[str, Decision], str | None]:
    """Every point's decision from the records (this server's and those measured before it), and the
    one of this server's points that gets the next run (None: all stopped). In a revisit (start > 1)
    a point the first pass left undecided first gets min_repeats runs of the new start."""
    mine = set(at.points)
    targets = revisit_targets(plan, at) if at.start > 1 else set()
    out: dict[str, Decision] = {}
    wanted: list[tuple[int, int, str]] = []  # (priority, runs so far, point): this server's open points
    for members, runs, starts, base in _groups(plan, at, at.start):
        if not any(pid in mine for pid in runs):
            continue
        noise = at.noise(plan, runs, starts)
        alloc = _allocate(runs, starts, base, at, noise)
        for pid in members:
            if pid not in mine or pid not in alloc.points:
                continue
            st = alloc.points[pid]
            state, here = st.state, starts[pid].count(at.start)
            if len(runs) == 1 and state == "resolved" and st.runs < at.rule.max_repeats:
                state = "open"  # a reference (no point to compare with yet): measured to max_repeats
            if state == "open" and st.runs >= at.rule.min_repeats and (
                    _hopeless(runs, pid, base, alloc, at, noise) or (len(runs) > 1 and not st.useful and pid != alloc.next)):
                # no run can settle it here, or every look it is open in waits on a point whose server
                # is gone (frozen with fewer runs): either way only another start of that setting helps
                state = NEEDS_START
            if pid in targets and here < at.rule.min_repeats and st.runs < at.rule.max_repeats:
                state = "open"  # a revisited point: min_repeats runs of this start before anything else
                wanted.append((-1, here, pid))
            elif state == "open":
                wanted.append((0 if alloc.next == pid else 1, st.runs, pid))
            out[pid] = Decision(state, st.runs, st.verdict, st.speedup, st.starts, here,
                                at.rule)
    return out, (min(wanted)[2] if wanted else None)


def revisit_targets(plan, at: Settling) -> set[str]:
    """The points another server start may still settle after the passes before ``at.start``:
    both ends of every question left open there (a verdict against no speculation, a place
    against the leader), those below max_repeats."""
    first = dataclasses.replace(at, start=at.start - 1)
    out: set[str] = set()
    for _, runs, starts, base in _groups(plan, first, first.start):
        alloc = _allocate(runs, starts, base, first, first.noise(plan, runs, starts))
        for pid, st in alloc.points.items():
            if pid == base or st.state in ("resolved", "eliminated"):
                continue
            ends = {pid}
            if st.verdict == "undecided":
                ends.add(base)
            if st.below is None and alloc.leader not in (None, pid):
                ends.add(alloc.leader)
            if len(ends) > 1:
                out |= {q for q in ends if len(runs[q]) < at.rule.max_repeats}
    return out


# Why a reference gets max_repeats runs: a pair is looked at at min(n_a, n_b), over the first runs
# of each side (``stats.sequential``), and a point measured alone (the first server's, usually no
# speculation) is frozen once its server stops. With n runs it pins every later comparison against
# it to its n-th look, whose share of alpha is small before the last look: a 2-3x speedup measured
# 10 times against 2 runs of no speculation stays undecided. At max_repeats runs every later
# point's own runs move its comparisons against the reference forward, to the last look.


def _hopeless(runs: dict[str, list[float]], pid: str, base: str, alloc, at: Settling, noise) -> bool:
    """No number of further runs against these server starts can settle the point's open questions:
    each undecided gap (to no speculation, to the leader) is within what the between-start spread
    alone leaves undecided (``ratio.start_floor``, two-sided at the sweep's confidence, with the
    two sides' start shares)."""
    from llama4spec.stats.ratio import start_floor

    if noise is None or noise.between.var <= 0:
        return False
    level = (1 - at.rule.confidence) / 2
    mean = {q: sum(math.log(x) for x in xs) / len(xs) for q, xs in runs.items()}
    others = [q for q in (base if alloc.points[pid].verdict in (None, "undecided") else None,
                          alloc.leader if alloc.leader != pid else None) if q and q != pid]
    return bool(others) and all(
        abs(mean[pid] - mean[q]) < start_floor(level, noise, alloc.points[pid].share + alloc.points[q].share)
        for q in others)
