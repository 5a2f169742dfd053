"""Valid records, each written by the tool's own writer under a directory given, for the generic
corruption test: sweep.json, settle.json, schedule.json, breakeven.json and lossless.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable


def sweep(tmp: Path) -> Path:
    """A tiny sweep run's sweep.json, as its report wrote it."""
    from tests.recorded_runs import finished_run

    return finished_run(tmp / "sweep-run") / "sweep" / "sweep.json"


def settle(tmp: Path) -> Path:
    """settle.json as a settle step writes it: its further runs and each point's stop record."""
    from llama4spec.records.io import write_checked
    from llama4spec.sweep.records import SettleRecord
    from llama4spec.sweep.rule import Rule

    rule = Rule().record()
    path = tmp / "sweep-settle" / "settle.json"
    path.parent.mkdir(parents=True)
    write_checked(SettleRecord, path, {"extra_runs": 4, "points": {
        "sweep-none-c4": {"reason": "resolved", "runs": 3, "rule": rule},
        "sweep-tiny_eagle-k3-c4": {"reason": "resolved", "runs": 5, "verdict": "faster", "rule": rule},
        "sweep-tiny_eagle-k1-c4": {"reason": "needs another server start", "runs": 6, "starts": 2, "rule": rule}}})
    return path


def schedule(tmp: Path) -> Path:
    """schedule.json as a schedule server writes it, from the schedule a tiny sweep derived."""
    from llama4spec.records.io import write_checked
    from llama4spec.sweep.sweep_records import Schedule

    derived = json.loads(sweep(tmp).read_text())["schedules"][0]
    path = tmp / "sweep-schedule" / "schedule.json"
    path.parent.mkdir(parents=True)
    write_checked(Schedule, path, {"draft": derived["draft"], "schedule": derived["schedule"],
                                   "override": derived["override"], "from_points": derived["from_points"],
                                   "missing": []})
    return path


def breakeven(tmp: Path) -> Path:
    """breakeven.json of a map with a curve and the real draft placed on it (the record a breakeven
    step writes: the map's record, its plot's series, the self-check, the points not measured)."""
    from llama4spec.breakeven import tables as breakeven_report
    from llama4spec.breakeven.map_fit import build
    from llama4spec.stats.noise import prior as known_noise
    from llama4spec.breakeven.records import BreakevenRecord
    from llama4spec.breakeven.report import runs_of
    from llama4spec.records.io import write_checked
    from tests.unit.breakeven.test_breakeven_report import _measured

    m = build(*runs_of(_measured()), noise=known_noise(0.13, 0.0, "test"))
    path = tmp / "breakeven" / "breakeven.json"
    path.parent.mkdir(parents=True)
    write_checked(BreakevenRecord, path, {**breakeven_report.to_record(m), "plot": ["c=1 k=3 real draft (draft)"],
                                          "self_check": breakeven_report.verdict(m),
                                          "not_measured": {"breakeven-k1-L2-c4": "failed: server exited"}})
    return path


def lossless(tmp: Path) -> Path:
    """lossless.json of a check with a greedy comparison and an exact multinomial test (lossy)."""
    from llama4spec.lossless.check import LOSSY
    from tests.unit.lossless.test_lossless_cli import _record

    path = tmp / "check" / "lossless.json"
    path.parent.mkdir(parents=True)
    _record(LOSSY, diverged=1).write(path)
    return path


EXAMPLES: dict[str, Callable[[Path], Path]] = {
    "sweep": sweep, "settle": settle, "schedule": schedule, "breakeven": breakeven, "lossless": lossless}
