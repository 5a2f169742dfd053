"""A ``compare`` step: EAGLE vs baseline from two bench steps' records (or saved result files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama4spec.errors import UserError
from llama4spec.results import compare
from llama4spec.runbook.rundir import bench_files, step_dir
from llama4spec.runbook.steps.failed import StepFailed


def plan(ctx, p) -> None:
    for role, ref in (("baseline", p.step.baseline), ("candidate", p.step.candidate)):
        if ref in ctx.kinds:
            p.inputs[role] = bench_files(step_dir(ctx.run_dir, ref))["record"]
        elif ref:
            p.inputs[role] = ctx.input_file(ref) or Path(ref)
    p.artifacts = {"table": p.dir / "table.md"}


def missing_input(p) -> str | None:
    """Why there is nothing to compare (a baseline or candidate record that is not there), or None."""
    for role, path in p.inputs.items():
        if not Path(path).is_file():
            return f"the {role} record {path} is missing"
    return None


def execute(run, p) -> dict[str, Any]:
    try:
        base, cand = compare.load_pair(p.inputs["baseline"], p.inputs["candidate"])
    except UserError as err:
        raise StepFailed("; ".join(err.problems)) from None
    compare.render(run.console, base, cand)
    table = compare.markdown(base, cand)
    p.artifacts["table"].parent.mkdir(parents=True, exist_ok=True)
    p.artifacts["table"].write_text(table)
    run.comparisons[p.id] = table
    return {label: {"baseline": a, "candidate": b, "speedup": s} for label, a, b, s in compare.rows(base, cand)}


def describe(p, say) -> None:
    pass
