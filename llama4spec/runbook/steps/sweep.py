"""A ``sweep`` step's report: the matrix expanded into serve/bench/stop steps before it (see
``runbook.matrix``); this step reads their records, analyses them and writes the report, the
analysis JSON and CSV, and the plots into its own directory."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from llama4spec.results import bench as bench_record
from llama4spec.results.bench import BenchRecord
from llama4spec.sweep import plots, report
from llama4spec.sweep.model import SCHEDULED, Analysis, Point, analyse

IMAGES = {
    "acceptance by position": "acceptance_by_position",
    "throughput vs concurrency": "throughput_vs_concurrency",
    "speedup, measured vs predicted": "speedup",
}
CSV_FIELDS = ("id", "draft", "lookahead", "concurrency", "output_throughput", "mean_tpot_ms", "mean_ttft_ms",
              "acceptance_length")


def artifacts(step_dir: Path) -> dict[str, Path]:
    files = {"report": step_dir / "report.md", "analysis": step_dir / "sweep.json", "table": step_dir / "sweep.csv"}
    files.update({stem: step_dir / f"{stem}.png" for stem in IMAGES.values()})
    return files


def plan(ctx, p) -> None:
    p.artifacts = artifacts(p.dir)


def point(step_id: str, cfg, record: BenchRecord, scheduled: bool = False) -> Point:
    """One sweep point from its bench step's config and record; ``scheduled``: measured on a
    server with a derived lookahead schedule (its lookahead is the schedule's largest k)."""
    k = cfg.lookahead if cfg.draft.method else None
    acc = record.acceptance if k else None
    concurrency = record.figure("max_concurrency")
    return Point(
        id=step_id,
        draft=(f"{cfg.draft.name}{SCHEDULED}" if scheduled else cfg.draft.name) if cfg.draft.method else "none",
        lookahead=k,
        concurrency=int(concurrency) if concurrency else cfg.bench.max_concurrency,
        output_throughput=record.figure("output_throughput"),
        mean_tpot_ms=record.figure("mean_tpot_ms"),
        mean_ttft_ms=record.figure("mean_ttft_ms"),
        acceptance_length=acc.mean_acceptance_length if acc else None,
        rates=tuple(acc.rate_per_position(k)) if acc else (),
        num_drafts=acc.num_drafts if acc else 0,
        accepted_per_pos=tuple(acc.accepted_per_pos) if acc else (),
    )


def collect_points(plan, ids: list[str]) -> tuple[list[Point], list[str]]:
    """The measured points among bench steps ``ids``, and the ids of those without a counted record."""
    from llama4spec.runbook.rundir import legacy_bench_record

    points, missing = [], []
    for pid in ids:
        p = plan.get(pid)
        record = bench_record.read(p.artifacts["record"]) or bench_record.read(legacy_bench_record(plan.run_dir, pid))
        if record is None or not record.counted:
            missing.append(pid)
            continue
        server = plan.get(p.step.server) if p.step.server else None
        scheduled = bool(server and server.step.derive_from)
        points.append(point(pid, p.composed.cfg, record, scheduled))
    return points, missing


def collect(plan, step) -> tuple[list[Point], list[str]]:
    """The measured points of a sweep step, and the ids of those without a counted record."""
    return collect_points(plan, step.points)


def write(analysis: Analysis, points: list[Point], files: dict[str, Path]) -> tuple[dict[str, list[str]], str]:
    """The PNGs, the analysis JSON and CSV, the Markdown report; returns each PNG's series and the report."""
    files["report"].parent.mkdir(parents=True, exist_ok=True)
    series = {
        "acceptance_by_position": plots.acceptance_by_position(points, files["acceptance_by_position"]),
        "throughput_vs_concurrency": plots.throughput_vs_concurrency(points, files["throughput_vs_concurrency"]),
        "speedup": plots.speedup_measured_vs_predicted(analysis, files["speedup"]),
    }
    images = {title: files[stem].name for title, stem in IMAGES.items()}
    text = report.markdown(analysis, images)
    files["report"].write_text(text)
    files["analysis"].write_text(json.dumps({**report.to_record(analysis), "plots": series}, indent=2) + "\n")
    if "table" in files:
        with open(files["table"], "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(CSV_FIELDS)
            for pt in points:
                writer.writerow(["" if getattr(pt, k) is None else getattr(pt, k) for k in CSV_FIELDS])
    return series, text


def run_report(plan, planned, console: Console, failures: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """Analyse a sweep step's points, write its files, print it; returns (markdown, record).
    ``failures``: step id -> why it has no result ("failed: ...", "skipped: ..."), from the run's status."""
    points, missing = collect(plan, planned.step)
    analysis = analyse(points)
    _, text = write(analysis, points, planned.artifacts)
    report.render(console, analysis)
    if missing:
        why = {pid: (failures or {}).get(pid, "no record") for pid in missing}
        text += "\nnot measured:\n\n" + "".join(f"- {pid}: {reason}\n" for pid, reason in why.items())
        planned.artifacts["report"].write_text(text)
    return text, {**report.to_record(analysis), "missing": missing,
                  **({"not_measured": why} if missing else {})}


def execute(run, p) -> dict[str, Any]:
    text, record = run_report(run.plan, p, run.console, run.not_run())
    if not p.flat:  # the run's summary.md lies one directory up: its links name the step's directory
        for stem in IMAGES.values():
            name = p.artifacts[stem].name
            text = text.replace(f"]({name})", f"]({p.id}/{name})")
    run.comparisons[p.id] = text
    return record


def describe(p, say) -> None:
    if p.step.matrix:
        say("    matrix: " + " x ".join(f"{k} [{', '.join(v)}]" for k, v in p.step.matrix.items()))
        say(f"    report over {len(p.step.points)} points (speedup, efficiency, best lookahead, plots)")
