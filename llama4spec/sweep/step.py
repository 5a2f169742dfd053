"""Running a sweep's report step and resuming a sweep: both read the run directory's records.

A point is finished when its benchmark record exists, succeeded, and was made by the very
command the plan would run now (so a changed override measures again instead of mixing runs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from llama4spec.bench import counts
from llama4spec.sweep import plots, report
from llama4spec.sweep.model import Analysis, Point, analyse

IMAGES = {
    "acceptance by position": "acceptance_by_position",
    "throughput vs concurrency": "throughput_vs_concurrency",
    "speedup, measured vs predicted": "speedup",
}


def artifacts(run_dir: Path, step_id: str) -> dict[str, Path]:
    files = {"report": run_dir / f"{step_id}.md", "analysis": run_dir / f"{step_id}.json"}
    files.update({stem: run_dir / f"{step_id}.{stem}.png" for stem in IMAGES.values()})
    return files


def read_record(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def _command(argv: Any) -> list[str] | None:
    """A bench command with its result directory left out: the record lies in that directory, and
    the same directory may be named relatively or absolutely."""
    if not isinstance(argv, list):
        return None
    out = list(argv)
    if "--result-dir" in out[:-1]:
        i = out.index("--result-dir")
        del out[i:i + 2]
    return out


def finished_record(planned) -> dict[str, Any] | None:
    """The record of a bench step already measured with the same command, else None."""
    record = read_record(planned.artifacts["record"])
    if record and counts(record) and _command(record.get("argv")) == _command(planned.argv):
        return record
    return None


def finished_steps(plan) -> dict[str, dict[str, Any] | None]:
    """Steps a resumed run skips: finished benches (with their records), and servers (with
    their stops) whose every bench is finished."""
    done: dict[str, dict[str, Any] | None] = {}
    for p in plan.steps:
        if p.kind == "bench":
            record = finished_record(p)
            if record is not None:
                done[p.id] = record
    for p in plan.steps:
        if p.kind == "serve":
            benches = [q.id for q in plan.steps if q.kind == "bench" and q.step.server == p.id]
            if benches and all(b in done for b in benches):
                done[p.id] = None
    for p in plan.steps:
        if p.kind == "stop" and p.step.server in done:
            done[p.id] = None
    return done


def point(step_id: str, cfg, record: dict[str, Any]) -> Point:
    """One sweep point from its bench step's config and record."""
    result = record.get("result") or {}
    acc = record.get("acceptance") or {}
    k = cfg.lookahead if cfg.draft.method else None
    return Point(
        id=step_id,
        draft=cfg.draft.name if cfg.draft.method else "none",
        lookahead=k,
        concurrency=int(result.get("max_concurrency") or cfg.bench.max_concurrency),
        output_throughput=result.get("output_throughput"),
        mean_tpot_ms=result.get("mean_tpot_ms"),
        mean_ttft_ms=result.get("mean_ttft_ms"),
        acceptance_length=acc.get("mean_acceptance_length") if k else None,
        rates=tuple(acc.get("acceptance_rate_per_position") or ()) if k else (),
        num_drafts=int(acc.get("num_drafts") or 0) if k else 0,
        accepted_per_pos=tuple(acc.get("accepted_per_pos") or ()) if k else (),
    )


def collect(plan, step) -> tuple[list[Point], list[str]]:
    """The measured points of a sweep step, and the ids of those without a record."""
    points, missing = [], []
    for pid in step.points:
        p = plan.get(pid)
        record = read_record(p.artifacts["record"])
        if record is None or not counts(record):
            missing.append(pid)
        else:
            points.append(point(pid, p.composed.cfg, record))
    return points, missing


def write(analysis: Analysis, points: list[Point], files: dict[str, Path]) -> tuple[dict[str, list[str]], str]:
    """The PNGs, the analysis JSON and the Markdown report; returns each PNG's series and the report."""
    series = {
        "acceptance_by_position": plots.acceptance_by_position(points, files["acceptance_by_position"]),
        "throughput_vs_concurrency": plots.throughput_vs_concurrency(points, files["throughput_vs_concurrency"]),
        "speedup": plots.speedup_measured_vs_predicted(analysis, files["speedup"]),
    }
    images = {title: files[stem].name for title, stem in IMAGES.items()}
    text = report.markdown(analysis, images)
    files["report"].write_text(text)
    files["analysis"].write_text(json.dumps({**report.to_record(analysis), "plots": series}, indent=2) + "\n")
    return series, text


def run_report(plan, planned, console: Console) -> tuple[str, dict[str, Any]]:
    """Analyse a sweep step's points, write its files, print it; returns (markdown, record)."""
    points, missing = collect(plan, planned.step)
    analysis = analyse(points)
    _, text = write(analysis, points, planned.artifacts)
    report.render(console, analysis)
    if missing:
        text += f"\nnot measured: {', '.join(missing)}\n"
    return text, {**report.to_record(analysis), "missing": missing}


def resume_dir(run_dir: Path, runbook_name: str) -> Path:
    """``run_dir`` if it is an earlier run of ``runbook_name``; UserError naming the fix otherwise."""
    from llama4spec.errors import UserError

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"--resume {run_dir}: no such run directory; give one under runs/{runbook_name}/")
    summary = read_record(run_dir / "summary.json")
    if summary is None:
        raise UserError(f"--resume {run_dir}: no summary.json there, so it is not a run directory; "
                        f"give one under runs/{runbook_name}/")
    if summary.get("runbook") != runbook_name:
        raise UserError(f"--resume {run_dir}: that is a run of runbook '{summary.get('runbook')}', "
                        f"not '{runbook_name}'; give a directory under runs/{runbook_name}/")
    return run_dir
