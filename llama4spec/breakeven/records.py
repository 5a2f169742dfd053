"""The model of breakeven.json (``records.base``): the break-even map a breakeven step writes
(``breakeven.tables.to_record`` with its plot's series, the self-check and the points not
measured). The step validates its record through the model before it writes it; the registry's
reader reads one back. Speedups are ratios in (0, 1e6], acceptance lengths in [1, k+1] at the
curve's lookahead k, headroom (a difference of acceptance lengths) in [-1e12, 1e12]."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import Field, ValidationInfo, field_validator

from llama4spec.breakeven.map_fit import CROSSES, NEVER, PAYS
from llama4spec.stats.noise_records import PriorRecord
from llama4spec.files import Expect
from llama4spec.records.base import Record
from llama4spec.records.registry import Entry, register
from llama4spec.records.shapes import listed
from llama4spec.sweep.sweep_records import (
    MAX_LIST, SLACK, Acceptance, Concurrency, Count, Level, Lookahead, OptAcceptance, OptBound, OptFinite, OptRatio,
    OptSentence, Ratio, Sentence, StepId, Text)
from llama4spec.records.io import read_model



class SpeedupRange(Record):
    value: OptRatio = None
    low: OptBound = None
    high: OptBound = None


class SignedRange(Record):
    value: OptFinite = None
    low: OptFinite = None
    high: OptFinite = None


class MapPoint(Record):
    label: Text
    set_length: OptAcceptance = None
    length: Acceptance
    speedup: SpeedupRange
    fitted: Ratio


class BreakEven(Record):
    value: OptAcceptance = None
    low: OptAcceptance = None
    high: OptAcceptance = None
    state: Literal[CROSSES, PAYS, NEVER] = Field(  # type: ignore[valid-type]
        description=f"{CROSSES}, {PAYS} or {NEVER}")
    first: Acceptance
    last: Acceptance


class Placement(Record):
    label: Text
    acceptance_length: Acceptance
    measured: Union[SpeedupRange, None] = None
    predicted: SpeedupRange
    headroom: SignedRange
    limit: Literal["pays", "draft quality", "engine cost"] = Field(description="pays, draft quality or engine cost")
    difference: Union[SpeedupRange, None] = None
    agrees: Union[bool, None] = None
    given: bool = False


WITHIN = "each acceptance length in them from 1 to the curve's lookahead + 1"


class Curve(Record):
    lookahead: Lookahead
    concurrency: Concurrency
    points: list[MapPoint] = Field(max_length=MAX_LIST,
                                   description=f"a list of at most {MAX_LIST} points (mappings), {WITHIN}")
    breakeven: BreakEven
    k0_cost: Union[SpeedupRange, None] = None
    placements: list[Placement] = Field(default=[], max_length=MAX_LIST,
                                        description=f"a list of at most {MAX_LIST} placements (mappings), {WITHIN}")

    @field_validator("points", "placements")
    @classmethod
    def _within_lookahead(cls, value: list[Any], info: ValidationInfo) -> list[Any]:
        k = info.data.get("lookahead")
        for item in value if isinstance(k, int) else []:
            length = item.length if isinstance(item, MapPoint) else item.acceptance_length
            if length > k + 1 + SLACK:
                raise ValueError(f"an acceptance length {length:g} above k + 1 = {k + 1}")
        return value


class BreakevenRecord(Record):
    """breakeven.json."""

    method: Sentence
    curves: listed(Curve, MAX_LIST, "curves (mappings)")
    noise: PriorRecord
    confidence: Level
    draws: Count
    notes: listed(Sentence, 1000, "notes") = []
    plot: listed(Sentence, MAX_LIST, "series") = []
    self_check: OptSentence = None
    not_measured: dict[StepId, Sentence] = Field(default={}, max_length=MAX_LIST,
                                                 description=f"at most {MAX_LIST} step ids, each with why")


BREAKEVEN = Expect("break-even map", "it is not a breakeven.json this tool wrote; run the breakeven step again")


def read_breakeven(path: Path) -> BreakevenRecord:
    return read_model(BreakevenRecord, path, BREAKEVEN)


register(Entry("<breakeven step>/breakeven.json", BreakevenRecord, "llama4spec.breakeven/1",
               "a breakeven step writes its map; nothing reads it back but a user", read_breakeven))
