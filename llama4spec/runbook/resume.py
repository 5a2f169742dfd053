"""Resuming a run: which steps an earlier run in the same directory already finished.

A bench step is finished when its record exists, counts, holds at least the repeats the step asks
for, was made by the very command the plan would run now, and its server would be started with
the very command the earlier run planned for it (its plan.json): a changed override, on the client
or the server side, measures again instead of mixing runs. What failed, was skipped or never ran
has no counted record, so it runs again, and so does its server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama4spec.errors import UserError
from llama4spec.records.plan import plan_or_problem
from llama4spec.results import bench as bench_record
from llama4spec.results.bench import BenchRecord
from llama4spec.runbook.rundir import STATUS, legacy_bench_record, status_or_problem


def _command(argv: Any) -> list[str] | None:
    """A bench command with its result directory and file left out: the record lies in that
    directory, which may be named relatively or absolutely (or laid out the older way)."""
    if not isinstance(argv, list):
        return None
    out = list(argv)
    for flag in ("--result-dir", "--result-filename"):
        if flag in out[:-1]:
            i = out.index(flag)
            del out[i:i + 2]
    return out


def finished_record(planned, notes: list[str] | None = None) -> BenchRecord | None:
    """The record of a bench step already measured with the same command, else None. A record that
    is not one this tool wrote whole (cut short, foreign) counts as none: ``notes`` says so."""
    for path in (planned.artifacts["record"], legacy_bench_record(planned.run_dir, planned.id)):
        record, problem = bench_record.read_record(path)
        if problem is not None and notes is not None:
            notes.append(f"step '{planned.id}' is measured again: {problem}")
        if (record and record.counted and _command(record.argv) == _command(planned.argv)
                and _runs_of(record, planned.step.keys) >= planned.step.keys.repeats):  # fewer: measured again
            return record
    return None


def _runs_of(record: BenchRecord, keys: Any) -> int:
    """The runs a bench step finds done in its record: all of them, or for a later server start of a
    sweep's setting (``adds_to``: its runs join that point's record) the counted runs of its start."""
    if not getattr(keys, "adds_to", None):
        return record.repeats
    return sum(1 for r in record.counted_runs() if r.start == keys.start)


def _earlier_commands(run_dir: Path) -> dict[str, Any]:
    """Step id -> the command the earlier run planned for it (its plan.json; empty without one)."""
    record, _ = plan_or_problem(run_dir / "plan.json")  # none, or not one this tool wrote: nothing to compare
    return {} if record is None else {s.id: list(s.argv) for s in record.root}


def changed_servers(plan) -> set[str]:
    """Serve steps whose command differs from the one the earlier run in the same directory planned."""
    earlier = _earlier_commands(plan.run_dir)
    if not earlier:
        return set()
    now = {r["id"]: r["argv"] for r in plan.to_record()}  # redacted as plan.json is
    return {p.id for p in plan.steps if p.step.traits.serves and p.id in earlier and earlier[p.id] != now[p.id]}


def finished_steps(plan, notes: list[str] | None = None) -> dict[str, BenchRecord | None]:
    """Steps a resumed run skips: finished benches (with their records), and servers (with
    their stops) whose every bench is finished and whose other steps (a settle step) have nothing
    left to do; a server nothing uses is never skipped. ``notes``: a line for each record found
    that is not one this tool wrote whole (its step runs again)."""
    done: dict[str, BenchRecord | None] = {}
    changed = changed_servers(plan)
    for p in plan.steps:
        if p.step.traits.benchmarks and p.step.server not in changed:
            record = finished_record(p, notes)
            if record is not None:
                done[p.id] = record
    for p in plan.steps:
        if p.step.traits.serves:
            users = [q for q in plan.steps if q.step.server == p.id and not q.step.traits.stops_server]
            benches = [q.id for q in users if q.step.traits.benchmarks]
            if users and all(b in done for b in benches) and \
                    not any(q.step.kind_of.pending(plan, q) for q in users if not q.step.traits.benchmarks):
                if not benches and p.step.kind_of.missing_input(plan, p) is not None:
                    continue  # it would not start anyway (a revisit with nothing to settle): the run says why
                done[p.id] = None
                done.update((q.id, None) for q in users if not q.step.traits.benchmarks)  # nothing left for them
    for p in plan.steps:  # an interleaved sweep's baseline stays while a candidate beside it measures
        beside = getattr(p.step.keys, "beside", None) if p.step.traits.serves else None
        if beside and p.id not in done:
            done.pop(beside, None)
    for p in plan.steps:
        if p.step.traits.stops_server and p.step.server in done:
            done[p.id] = None
    return done


def resume_dir(run_dir: Path, runbook_name: str) -> Path:
    """``run_dir`` if it is an earlier run of ``runbook_name``; UserError naming the fix otherwise."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"--resume {run_dir}: no such run directory; give one under runs/{runbook_name}/")
    summary, problem = status_or_problem(run_dir)
    if problem is not None:
        raise UserError(f"--resume {run_dir}: {problem}; give a run directory under runs/{runbook_name}/")
    if summary is None:
        raise UserError(f"--resume {run_dir}: no {STATUS} there, so it is not a run directory; "
                        f"give one under runs/{runbook_name}/")
    if summary.get("runbook") != runbook_name:
        raise UserError(f"--resume {run_dir}: that is a run of runbook '{summary.get('runbook')}', "
                        f"not '{runbook_name}'; give a directory under runs/{runbook_name}/")
    return run_dir
