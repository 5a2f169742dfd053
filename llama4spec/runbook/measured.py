"""What a plan being run has measured so far: its bench steps' counted records with their configs
(what a sweep's report and a derived lookahead schedule read)."""

from __future__ import annotations

from typing import Any

from llama4spec.results import bench as bench_record
from llama4spec.runbook.rundir import Measured, legacy_bench_record, read_config
from llama4spec.stats.point import Point
from llama4spec.analysis.points import points


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
    return points((pid, m.config, m.record) for pid, m in found.items()), [pid for pid in ids if pid not in found]
