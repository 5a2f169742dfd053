"""What a sweep decides about the servers it generates, at run time, from the points measured
before them: each is a serve step's ``gate`` (``steps.serve.Gate``), made by the expansion
(``expand``) and carried by the serve step.

    Dominance   skip_dominated: a larger lookahead whose bound cannot reach the leader is not started
    Revisit     revisit: true: a second start of a server, only if the first pass left its points undecided
    MoreBlocks  design: interleaved, repeats: auto: a candidate's next back-to-back block, only while it is open
    Schedule    verify_schedule: true: the lookahead schedule derived from the points, before the server starts
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama4spec.runbook.steps.failed import StepFailed
from llama4spec.runbook.steps.serve import Gate, fill
from llama4spec.sweep.planned import design_of
from llama4spec.sweep.rule import Rule


@dataclass(frozen=True)
class Dominance(Gate):
    """A sweep's larger lookahead that cannot win, from the points measured before it
    (``sweep.dominance``): not started, and the report says why."""

    earlier: list[str]  # the sweep's points before this server
    rule: Rule  # its confidence: of the bounds that may find the server dominated

    def may_skip(self, p, before) -> bool:
        """Only a lookahead of a draft measured before it at a smaller one can be found dominated."""
        cfg = p.composed.cfg if p.composed is not None else None
        if cfg is None or not cfg.draft.method:
            return False
        for q in map(before.planned, self.earlier):
            qc = q.composed.cfg if q is not None and q.composed is not None else None
            if qc is not None and qc.draft.name == cfg.draft.name and qc.lookahead < cfg.lookahead:
                return True
        return False

    def missing_input(self, plan, p) -> str | None:
        if not self.earlier or p.composed is None:
            return None
        cfg = p.composed.cfg
        if not cfg.draft.method or cfg.draft.lookahead_schedule:
            return None
        from llama4spec.runbook.measured import measured_in_plan
        from llama4spec.runbook.noise_prior import hardware_prior
        from llama4spec.sweep.dominance import Measured, why_not
        from llama4spec.stats.components import pooled

        planned = {q.id for q in plan.steps}
        points = []
        measured = measured_in_plan(plan, [q for q in self.earlier if q in planned])
        noise = pooled(hardware_prior(cfg.hardware),
                       {pid: m.record.samples("output_throughput") for pid, m in measured.items()},
                       {pid: m.record.sample_starts("output_throughput") for pid, m in measured.items()})
        for pid, m in measured.items():
            q = plan.get(pid)
            qc = q.composed.cfg
            acc = m.record.acceptance
            points.append(Measured(client=tuple(q.step.keys.overrides), draft=qc.draft.name if qc.draft.method else None,
                                   lookahead=qc.lookahead if qc.draft.method else None,
                                   throughputs=m.record.samples("output_throughput"),
                                   drafts=acc.num_drafts if acc else 0,
                                   accepted_at=list(acc.accepted_per_pos) if acc else [],
                                   acceptance_lengths=m.record.acceptance_samples()))
        return why_not(cfg.draft.name, cfg.lookahead, points, self.rule.confidence, noise)


@dataclass(frozen=True)
class Revisit(Gate):
    """A revisit server (``revisit: true``) with nothing left to settle, or without the first pass's
    records (as in a launcher's group): not started, and why."""

    points: list[str]  # its points (started only if one is undecided)
    first_pass: list[str]  # every point of the sweep's first pass
    rule: Rule

    def missing_input(self, plan, p) -> str | None:
        from llama4spec.runbook.measured import measured_in_plan
        from llama4spec.sweep.sequential import Settling, revisit_targets

        planned = {q.id for q in plan.steps}
        absent = [q for q in self.first_pass if q not in planned]
        if absent:
            return (f"not revisited: this group does not hold the first pass's points ({', '.join(absent[:3])}"
                    f"{', ...' if len(absent) > 3 else ''}); a revisit runs in the process that ran the first pass")
        if not measured_in_plan(plan, list(self.points)):
            return "not revisited: the first pass measured none of its points"
        at = Settling(list(self.points), [q for q in self.first_pass if q not in self.points], self.rule, start=2)
        try:
            targets = revisit_targets(plan, at)
        except ValueError as err:  # records the rule cannot take: its settle step says so too
            return f"not revisited: {err}"
        if not targets & set(self.points):
            return "not revisited: the first pass left none of its points undecided (below max_repeats)"
        return None


@dataclass(frozen=True)
class MoreBlocks(Gate):
    """A candidate's block beyond the first ``min_repeats`` (``design: interleaved`` with ``repeats:
    auto``), on the no speculation server that starts it: started only while the candidate's
    comparison against no speculation is open (neither faster, slower nor equivalent) at some
    client setting, as the sweep's report would decide it now from the blocks measured so far
    (``stats.speedup_model.analyse`` with the sweep's block rule: anytime p-values over a look per
    block, Holm over the concurrency; ``stats.looks.block_look``). Not started otherwise,
    and why; nor without the earlier blocks' records (as in a launcher's group)."""

    sweep: str  # the sweep step (its prior and margin)
    candidate: list[str]  # the candidate's points (its first block's bench steps)
    points: list[str]  # every point of the sweep (one family a concurrency)
    block: int  # this block's number
    rule: Rule

    def missing_input(self, plan, p) -> str | None:
        from llama4spec.stats.speedup_model import analyse
        from llama4spec.runbook.measured import collect_points
        from llama4spec.runbook.noise_prior import of_sweep

        planned = {q.id for q in plan.steps}
        absent = [q for q in [self.sweep, *self.points] if q not in planned]
        if absent:
            return (f"not started: this group does not hold the earlier blocks' points ({', '.join(absent[:3])}"
                    f"{', ...' if len(absent) > 3 else ''}); further blocks run in the process that ran the first ones")
        points, _ = collect_points(plan, list(self.points))
        if not any(pt.id in self.candidate for pt in points):
            return "not started: its earlier blocks measured none of its points"
        sweep = plan.get(self.sweep).step
        rule = (self.rule.min_repeats, self.rule.max_repeats, self.rule.confidence)
        try:
            analysis = analyse(points, of_sweep(design_of(sweep), []), margin=sweep.keys.margin, block_rule=rule)
        except ValueError as err:  # records the analysis cannot take
            return f"not started: {err}"
        mine = [(a.title, r.comparison) for a in analysis.at for r in [*a.rows, *a.others]  # others: an A/A's
                if r.point.id in self.candidate]
        if not mine or any(c is None or not c.decided for _, c in mine):
            return self._budget(plan, p, analysis, rule)
        if leader_question(analysis.at, self.candidate) is not None:  # the leader against the runner-up is open
            return self._budget(plan, p, analysis, rule)
        said = "; ".join(f"{c.sentence()} at {title}" for title, c in mine)
        return (f"not started: decided against no speculation at every client setting after {self.block - 1} blocks "
                f"({said}), and not in an open contest for the best ({_best(analysis.at)})")

    def _budget(self, plan, p, analysis, rule) -> str | None:
        """Why the block is not started when it would exceed a budget (``budget_stop``), else None."""
        from llama4spec.runbook.rundir import read_status
        from llama4spec.sweep.budget_stop import STOPPED, budget_stop, said

        found = budget_stop(plan, self.sweep, p, read_status(plan.run_dir))
        if found is None:
            return None
        return f"not started: {STOPPED}: {found.text()}. {said(analysis, self.block - 1, rule)}"

    def describe(self, p, say) -> None:
        say(f"    started only if the candidate's comparison against no speculation is still open at some client "
            f"setting after {self.block - 1} blocks, or it is the leader or the runner-up of an undecided best there "
            f"(repeats: auto; at most {self.rule.max_repeats})")


def leader_question(at: list, candidate: list[str]) -> str | None:
    """The client setting (its title) where the candidate (its points) is the leader or the
    runner-up of a best not yet decided: the leader (the pick) against the runner-up (the setting
    with the highest median among those the pick is not yet declared faster than or equivalent
    to), the question a further block of either settles first; None where there is none."""
    for a in at:
        pick = a.pick
        if pick is None or pick.point is None or pick.decided or pick.single:
            continue
        rivals = [q for q in a.points if q.id != pick.point.id and (c := a.comparisons.get((pick.point.id, q.id)))
                  is not None and not c.decided and q.output_throughput is not None]
        if not rivals:
            continue
        runner = max(rivals, key=lambda q: q.output_throughput)
        if pick.point.id in candidate or runner.id in candidate:
            return a.title
    return None


def _best(at: list) -> str:
    return "; ".join(f"best at {a.title}: {a.pick.label}, {'decided' if a.pick.decided else 'undecided'}"
                     for a in at if a.pick is not None and a.pick.point is not None)


@dataclass(frozen=True)
class Schedule(Gate):
    """A verification server (``verify_schedule: true``, a second phase of the sweep): its lookahead
    schedule derived, before it starts, from the points measured before it."""

    derive_from: list[str]

    def may_skip(self, p, before) -> bool:
        return False  # it starts the server (its schedule derived first)

    def before_start(self, run, p) -> dict[str, Any]:
        return {"lookahead_schedule": derive_schedule(run, p, self.derive_from)}

    def describe(self, p, say) -> None:
        say(f"    lookahead schedule: derived at run time from points {', '.join(self.derive_from)}, "
            f"validated before this server starts")


def derive_schedule(run, p, derive_from: list[str]) -> list[list[int]]:
    """A verification server's lookahead schedule, derived now from the points measured before it;
    its config, commands and record are rebuilt with it."""
    from llama4spec.config.compose import compose_config
    from llama4spec.config.schedule import schedule_problems
    from llama4spec.config.validate import validate
    from llama4spec.runbook.measured import collect_points
    from llama4spec.records.io import write_checked
    from llama4spec.sweep.sweep_records import Schedule
    from llama4spec.stats.speedup_model import analyse
    from llama4spec.sweep.schedule_fit import derive

    from llama4spec.runbook.noise_prior import hardware_prior

    draft = p.composed.cfg.draft.name
    points, missing = collect_points(run.plan, derive_from)
    schedule = derive(analyse(points, hardware_prior(p.composed.cfg.hardware)), draft)
    if schedule is None or not schedule.speculates:
        why = "no speculation wins at any measured concurrency" if schedule else "no measured point of the draft"
        raise StepFailed(f"no lookahead schedule to verify for {draft}: {why} (missing: {', '.join(missing) or '-'})")
    found = schedule_problems(schedule.ranges, p.composed.cfg.lookahead)
    if found:
        raise StepFailed(f"the derived schedule {schedule.ranges} is not valid: {'; '.join(found)}")
    ranges = ",".join(f"[{a},{b},{k}]" for a, b, k in schedule.ranges)
    derived = [f"lookahead={schedule.lookahead}", f"draft.lookahead_schedule=[{ranges}]"]  # as deployed
    composed = compose_config([*p.composed.overrides, *derived])
    problems = validate(composed.cfg)
    if problems:
        raise StepFailed(f"the derived schedule's config is not valid: {'; '.join(problems)}")
    p.composed = composed
    for q in run.plan.steps:  # its benchmarks record the schedule's lookahead
        if q.step.server == p.id and q.step.traits.benchmarks and q.composed is not None:
            q.composed = compose_config([*q.composed.overrides, *derived])
    fill(p, run.plan.runbook.env)
    run.write_config(p)
    write_checked(Schedule, p.dir / "schedule.json", {"draft": draft, "schedule": schedule.ranges,
                                                       "override": schedule.override(),
                                                       "from_points": schedule.from_points, "missing": missing})
    run.say(f"      lookahead schedule derived from {len(points)} measured points: {schedule.ranges}")
    return schedule.ranges
