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
from llama4spec.sweep import plots, render
from llama4spec.sweep.model import Analysis, Point, analyse
from llama4spec.runbook.rundir import Measured, csv_rows, read_config
from llama4spec.sweep.points import point

IMAGES = {
    "acceptance by position": "acceptance_by_position",
    "throughput vs concurrency": "throughput_vs_concurrency",
    "speedup, measured vs predicted": "speedup",
}


def artifacts(step_dir: Path) -> dict[str, Path]:
    files = {"report": step_dir / "report.md", "analysis": step_dir / "sweep.json", "table": step_dir / "sweep.csv"}
    files.update({stem: step_dir / f"{stem}.png" for stem in IMAGES.values()})
    return files


def plan(ctx, p) -> None:
    p.artifacts = artifacts(p.dir)


def config_data(p) -> dict[str, Any]:
    """A bench step's composed config as plain data: its config.yaml as written (what ``llama4spec
    report`` reads later), or the plan's composition when none was written."""
    data = read_config(p.artifacts["config_file"]) if p.artifacts.get("config_file") else None
    if data is None and p.composed is not None:
        from llama4spec.results.provenance import public_config

        data = public_config(p.composed.raw)
    return data or {}


def measured_in_plan(plan, ids: list[str]) -> dict[str, Measured]:
    """The counted records among bench steps ``ids`` of a plan being run, with their configs."""
    from llama4spec.runbook.rundir import legacy_bench_record

    found: dict[str, Measured] = {}
    for pid in ids:
        p = plan.get(pid)
        record = bench_record.read(p.artifacts["record"]) or bench_record.read(legacy_bench_record(plan.run_dir, pid))
        if record is not None and record.counted:
            found[pid] = Measured(pid, config_data(p), record, p.dir)
    return found


def collect_points(plan, ids: list[str]) -> tuple[list[Point], list[str]]:
    """The measured points among bench steps ``ids``, and the ids of those without a counted record."""
    found = measured_in_plan(plan, ids)
    return [point(pid, m.config, m.record) for pid, m in found.items()], [pid for pid in ids if pid not in found]


def write(analysis: Analysis, points: list[Point], files: dict[str, Path],
          measured: dict[str, Measured] | None = None) -> tuple[dict[str, list[str]], str]:
    """The PNGs, the analysis JSON, the CSV (a row per point and repeat), the Markdown report;
    returns each PNG's series and the report."""
    files["report"].parent.mkdir(parents=True, exist_ok=True)
    series = {
        "acceptance_by_position": plots.acceptance_by_position(points, files["acceptance_by_position"]),
        "throughput_vs_concurrency": plots.throughput_vs_concurrency(points, files["throughput_vs_concurrency"]),
        "speedup": plots.speedup_measured_vs_predicted(analysis, files["speedup"]),
    }
    images = {title: files[stem].name for title, stem in IMAGES.items()}
    text = render.markdown(analysis, images)
    files["report"].write_text(text)
    files["analysis"].write_text(json.dumps({**render.to_record(analysis), "plots": series}, indent=2) + "\n")
    if "table" in files:
        header, rows = csv_rows([pt.id for pt in points], measured or {})
        with open(files["table"], "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=header)
            writer.writeheader()
            writer.writerows(rows)
    return series, text


def report_points(ids: list[str], measured: dict[str, Measured], files: dict[str, Path], console: Console,
                  not_run: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """A sweep's report over points ``ids`` from their records: written to ``files``, printed;
    returns (markdown, record). ``not_run``: step id -> why it has no result, from the run's status."""
    points = [point(pid, measured[pid].config, measured[pid].record) for pid in ids if pid in measured]
    missing = [pid for pid in ids if pid not in measured]
    analysis = analyse(points)
    _, text = write(analysis, points, files, measured)
    render.render(console, analysis)
    why = {pid: (not_run or {}).get(pid, "no record") for pid in missing}
    if missing:
        text += "\nnot measured:\n\n" + "".join(f"- {pid}: {reason}\n" for pid, reason in why.items())
        files["report"].write_text(text)
    return text, {**render.to_record(analysis), "missing": missing, **({"not_measured": why} if missing else {})}


def run_report(plan, planned, console: Console, failures: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """Analyse a sweep step's points, write its files, print it; returns (markdown, record).
    ``failures``: step id -> why it has no result ("failed: ...", "skipped: ..."), from the run's status."""
    ids = planned.step.points
    return report_points(ids, measured_in_plan(plan, ids), planned.artifacts, console, failures)


def linked(text: str, step_id: str) -> str:
    """A report's image links as seen from the run directory (summary.md), one level up."""
    for stem in IMAGES.values():
        text = text.replace(f"]({stem}.png)", f"]({step_id}/{stem}.png)")
    return text


def execute(run, p) -> dict[str, Any]:
    text, record = run_report(run.plan, p, run.console, run.not_run())
    run.comparisons[p.id] = text if p.flat else linked(text, p.id)
    return record


def describe(p, say) -> None:
    if p.step.matrix:
        say("    matrix: " + " x ".join(f"{k} [{', '.join(v)}]" for k, v in p.step.matrix.items()))
        say(f"    report over {len(p.step.points)} points (speedup, efficiency, best lookahead, plots)")
