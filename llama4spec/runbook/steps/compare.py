"""A ``compare`` step: EAGLE vs baseline from two bench steps' records (or saved result files)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama4spec.errors import UserError
from llama4spec.results import bench as bench_record, comparison as compare
from llama4spec.files import write_atomic
from llama4spec.runbook import fields
from llama4spec.runbook.rundir import bench_files, step_dir
from llama4spec.runbook.steps.failed import StepFailed
from llama4spec.runbook.spec import MergeRead, Reference, Traits
from llama4spec.runbook.steps import traits_of
from llama4spec.runbook.steps.base import BaseKind


@dataclass
class Keys:
    baseline: str | None = fields.text()  # a bench step's id or a saved JSON file
    candidate: str | None = fields.text()


def references(keys: Keys) -> list[Reference]:
    return [Reference("baseline", keys.baseline, "bench", file_ok=True),
            Reference("candidate", keys.candidate, "bench", file_ok=True)]


def plan(ctx, p) -> None:
    """Each side: a bench step's record (written by the run) or a saved file, read now and checked to
    be a benchmark result that can be compared, before anything starts (a dry run too)."""
    for r in references(p.step.keys):
        role, ref = r.role, r.ref
        if ref in ctx.kinds:
            p.inputs[role] = bench_files(step_dir(ctx.run_dir, ref))["record"]
        elif ref:
            p.inputs[role] = ctx.input_file(ref) or Path(ref)
            if ctx.input_file(ref) is not None:
                try:
                    compare.load(p.inputs[role])
                except UserError as err:
                    ctx.report(p.id, [f"{role} {line}" for line in err.problems])
    p.artifacts = {"table": p.dir / "table.md"}


def missing_input(plan, p) -> str | None:
    """Why there is nothing to compare (a baseline or candidate record that is not there), or None."""
    for role, path in p.inputs.items():
        if not Path(path).is_file():
            return f"the {role} record {path} is missing"
    return None


def _headline(plan, p, base, cand) -> str:
    """The comparison's headline, the baseline's hardware prior as its noise."""
    from llama4spec.runbook.noise_prior import hardware_prior

    ref = p.step.keys.baseline
    planned = plan.get(ref) if ref in {q.id for q in plan.steps} else None
    return headline(base, cand, hardware_prior(planned.composed.cfg.hardware)
                    if planned is not None and planned.composed else None)


def headline(base, cand, prior) -> str:
    """Two records' headline (``analysis.pair_headline``): output throughput with its interval and
    verdict on ``prior`` pooled with their runs, or why there is none (the run and ``report`` alike)."""
    from llama4spec.analysis.pair_headline import headline as line

    key = "output_throughput"
    return line(base.samples(key), cand.samples(key), prior, base.sample_starts(key), cand.sample_starts(key))


def execute(run, p) -> dict[str, Any]:
    try:
        base, cand = compare.load_pair(p.inputs["baseline"], p.inputs["candidate"])
    except UserError as err:
        raise StepFailed("; ".join(err.problems)) from None
    line = _headline(run.plan, p, base, cand)
    run.console.print(line, markup=False, highlight=False, soft_wrap=True)
    compare.render(run.console, base, cand)
    sides = {role: _async_scheduling(run, ref) for role, ref in (("baseline", p.step.keys.baseline),
                                                                  ("candidate", p.step.keys.candidate))}
    note = async_note(sides)
    if note:
        run.console.print(f"warning: {note}", markup=False, highlight=False, soft_wrap=True)
        line = f"{line}\n\nwarning: {note}"
    table = f"{line}\n\n{compare.markdown(base, cand)}"
    write_atomic(p.artifacts["table"], table)
    run.keep_comparison(p.id, table)
    return {label: {"baseline": a, "candidate": b, "speedup": s} for label, a, b, s in compare.rows(base, cand)}


def _async_scheduling(run, ref: str | None) -> bool | None:
    """Whether the server a bench step of this run measured ran with async scheduling (its serve
    step's result, read from the server's own flags and log); None when not known (a saved file)."""
    planned = run.plan.get(ref) if ref in run.kinds else None
    server = getattr(planned.step.keys, "server", None) if planned is not None else None
    result = run.entries.get(server, {}).get("result") if server else None
    value = result.get("async_scheduling") if isinstance(result, dict) else None
    return value if isinstance(value, bool) else None


def async_note(sides: dict[str, bool | None]) -> str:
    """The sentence naming a comparison of async scheduling on against off ("" when equal or unknown)."""
    if None in sides.values() or len(set(sides.values())) < 2:
        return ""
    said = ", ".join(f"the {role} {'with' if on else 'without'} it" for role, on in sides.items())
    return (f"the two servers ran with different schedulers ({said}: async scheduling): the comparison also "
            f"compares the scheduler; pin it with serve.async_scheduling=false on both sides")


def describe(p, say) -> None:
    pass


@dataclass
class Rebuilt:
    """A comparison's part of ``report``: role -> the bench step it names (its records merged from
    every run directory given), or the saved file."""

    id: str
    refs: dict[str, str]
    writes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def points(self) -> list[str]:
        return [ref for ref in self.refs.values() if "/" not in ref]

    def read(self, ctx: MergeRead) -> None:
        pass

    def write(self, ctx: MergeRead) -> int:
        """Its headline and table from the two records it names, into ``ctx.out``."""
        from llama4spec.runbook.noise_prior import of_sweep

        refs, measured = self.refs, ctx.measured
        pair = [measured[ref].record if ref in measured else (bench_record.read(Path(ref)) if "/" in ref else None)
                for ref in (refs.get("baseline", ""), refs.get("candidate", ""))]
        if pair[0] is None or pair[1] is None:
            roles = zip(("baseline", "candidate"), (refs.get("baseline", ""), refs.get("candidate", "")), pair)
            absent = [role + (f" ({ctx.reasons[ref]})" if ref in ctx.reasons else "") for role, ref, rec in roles
                      if rec is None]
            ctx.comparisons[self.id] = f"not compared: no counted record of the {' and the '.join(absent)}\n"
            return 0
        prior = of_sweep(None, [measured[ref].config for ref in refs.values() if ref in measured])
        line = headline(*pair, prior)
        ctx.console.print(line, markup=False, highlight=False, soft_wrap=True)
        compare.render(ctx.console, *pair)
        table = f"{line}\n\n{compare.markdown(*pair)}"
        write_atomic(ctx.out / self.id / "table.md", table)
        ctx.comparisons[self.id] = table
        return 0


def merge_part(sid: str, sources: list[Any]) -> Rebuilt | None:
    """A compare step's part of ``report``: what it compared, as the first source that planned it
    recorded (a bench step of the run, or a saved file); None when none did."""
    for source in sources:
        step, kinds = source.step(sid), source.kinds()
        if step is not None and isinstance(step.get("inputs"), dict):
            refs = {}
            for role, path in step["inputs"].items():
                name = Path(str(path)).parent.name
                refs[role] = name if traits_of(kinds.get(name)).benchmarks else str(path)
            return Rebuilt(sid, refs)
    return None


KIND = BaseKind("compare", Keys, Traits(merges=True), plan, execute, describe, required=("baseline", "candidate"),
                references=references, missing_input=missing_input, merge_part=merge_part)
