"""The models of a sweep's step records (``records.base``): settle.json (a ``settle`` step's
decisions, repeats: auto) and schedule.json (a schedule server's derived lookahead schedule, the
model ``sweep.sweep_records.Schedule``). Nothing reads them back but a user: each writer checks
its data through its model before it writes (``records.io.write_checked``), and each is registered
(``records.registry``) with a reader."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from llama4spec.sweep.sweep_records import MAX_LIST, Count, OptText, Schedule, StepId
from llama4spec.files import Expect
from llama4spec.records.base import Record
from llama4spec.records.io import read_model
from llama4spec.records.registry import Entry, register


class PointStop(Record):
    reason: Literal["open", "resolved", "eliminated", "max_repeats", "needs another server start"] = Field(
        description="open, resolved, eliminated, max_repeats or needs another server start")
    runs: Count
    verdict: OptText = None
    starts: Count = 1


class SettleRecord(Record):
    """settle.json: a settle step's further runs and each point's decision."""

    extra_runs: Count
    points: dict[StepId, PointStop] = Field(max_length=MAX_LIST,
                                            description=f"a mapping of at most {MAX_LIST} step ids to their decisions")


SETTLE = Expect("settle record", "it is not a settle.json this tool wrote; run the sweep again (--resume)")
SCHEDULE = Expect("schedule record", "it is not a schedule.json this tool wrote; run the sweep again (--resume)")


def read_settle(path: Path) -> SettleRecord:
    return read_model(SettleRecord, path, SETTLE)


def read_schedule(path: Path) -> Schedule:
    return read_model(Schedule, path, SCHEDULE)


register(Entry("<settle step>/settle.json", SettleRecord, "llama4spec.settle/1",
               "a sweep's settle step writes its decisions (repeats: auto)", read_settle))
register(Entry("<schedule step>/schedule.json", Schedule, "llama4spec.schedule/1",
               "a sweep's schedule server writes the lookahead schedule it derived", read_schedule))
