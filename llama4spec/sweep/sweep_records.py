"""The model of a sweep's analysis, sweep.json (``records.base``): the record the sweep's report
writes (``sweep_json.to_record``, validated through the model before it is written) and a
breakeven step's ``draft_from`` reads back; registered (``records.registry``) with that reader.
Its bounded field types and ``Schedule`` (a derived lookahead schedule) serve the sweep's other
records (``sweep.records``) and the break-even map's (``breakeven.records``).

Every number is finite and bounded: a throughput in [1e-6, 1e9] tok/s, a speedup or any ratio in
(0, 1e6], milliseconds in [0, 1e9], an acceptance length in [1, k+1] at lookahead k (a verification
step keeps the target's token and at most k drafted ones), a concurrency in [1, 1e6]."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import Field, ValidationInfo, field_validator

from llama4spec.config.validate import MAX_LOOKAHEAD
from llama4spec.files import Expect, RECORD_BYTES
from llama4spec.records.base import MAX_TEXT, Record
from llama4spec.records.io import read_model
from llama4spec.records.registry import Entry, register
from llama4spec.records.shapes import listed, maybe

MAX_LIST = 4096  # rows at a concurrency, concurrencies of a sweep, points of a schedule
MAX_SENTENCE = 20_000  # a verdict or a sentence the report writes
SLACK = 1e-9  # an acceptance length computed as a float mean may exceed k + 1 by rounding

Text = Annotated[str, Field(max_length=MAX_TEXT, description=f"text of at most {MAX_TEXT} characters")]
Sentence = Annotated[str, Field(max_length=MAX_SENTENCE, description="a sentence of at most 20,000 characters")]
StepId = Annotated[str, Field(max_length=120, pattern=r"^[A-Za-z][\w-]*$",
                              description="a step id (a letter, then letters, digits, '_' or '-'; at most 120)")]
Throughput = Annotated[float, Field(ge=1e-6, le=1e9, description="a throughput from 1e-06 to 1e9")]
Ratio = Annotated[float, Field(gt=0, le=1e6, description="a ratio above 0, at most 1e6")]
Bound = Annotated[float, Field(ge=0, le=1e12, description="an interval's bound from 0 to 1e12")]
Millis = Annotated[float, Field(ge=0, le=1e9, description="milliseconds from 0 to 1e9")]
Finite = Annotated[float, Field(ge=-1e12, le=1e12, description="a number from -1e12 to 1e12")]
Share = Annotated[float, Field(ge=0, le=1, description="a share from 0 to 1")]
Level = Annotated[float, Field(gt=0, lt=1, description="a level between 0 and 1")]
DF = Annotated[float, Field(ge=0, le=1e9, description="degrees of freedom from 0 to 1e9")]
Count = Annotated[int, Field(ge=0, le=1_000_000_000, description="a whole number from 0 to 1e9")]
Concurrency = Annotated[int, Field(ge=1, le=1_000_000, description="a concurrency from 1 to 1,000,000")]
Lookahead = Annotated[int, Field(ge=0, le=MAX_LOOKAHEAD, description=f"a lookahead from 0 to {MAX_LOOKAHEAD}")]
Temperature = Annotated[float, Field(ge=0, le=100, description="a temperature from 0 to 100")]
Verdict = Literal["faster", "slower", "undecided", "equivalent"]
VERDICT = "faster, slower, undecided or equivalent"
Acceptance = Annotated[float, Field(ge=1, le=MAX_LOOKAHEAD + 1 + SLACK,
                                    description="an acceptance length from 1 to the lookahead + 1")]


OptText, OptStepId, OptRatio, OptThroughput = maybe(Text), maybe(StepId), maybe(Ratio), maybe(Throughput)
OptMillis, OptFinite, OptLookahead, OptConcurrency = maybe(Millis), maybe(Finite), maybe(Lookahead), maybe(Concurrency)
OptBound, OptTemperature, OptDF = maybe(Bound), maybe(Temperature), maybe(DF)
OptSentence, OptAcceptance = maybe(Sentence), maybe(Acceptance)


class RatioInterval(Record):
    ratio: Ratio
    low: OptBound = None  # null: a bound beyond what a float holds (written null)
    high: OptBound = None
    confidence: Level
    df: OptDF = None
    method: OptText = None


class FigureInterval(Record):
    """A figure's median and interval over a point's repeats, with the samples."""

    median: OptFinite = None
    low: OptFinite = None
    high: OptFinite = None
    n: Count = 0
    method: OptText = None
    samples: listed(Finite, 1_000_000, "samples") = []


class Row(Record):
    """One setting at a concurrency (a row, or a point without speculation compared with the baseline)."""

    id: StepId
    draft: OptText = None
    lookahead: OptLookahead = None
    category: OptText = None
    repeats: Count = 0
    output_throughput: OptThroughput = None
    mean_tpot_ms: OptMillis = None
    mean_ttft_ms: OptMillis = None
    acceptance_length: OptAcceptance = None
    acceptance_rate_per_position: listed(Share, MAX_LOOKAHEAD, "rates") = []
    speedup: OptRatio = None
    speedup_interval: Union[RatioInterval, None] = None
    verdict: Union[Verdict, None] = Field(default=None, description=VERDICT)
    intervals: dict[Text, FigureInterval] = Field(default={}, max_length=64, description="at most 64 figures")
    bound: OptRatio = None
    efficiency: OptRatio = None
    predicted_speedup: OptRatio = None

    @field_validator("acceptance_length")
    @classmethod
    def _within_lookahead(cls, value: float | None, info: ValidationInfo) -> float | None:
        """At most k + 1 at the row's lookahead k (a row without speculation has no acceptance)."""
        k = info.data.get("lookahead")
        if value is not None and isinstance(k, int) and value > k + 1 + SLACK:
            raise ValueError(f"above k + 1 = {k + 1}")
        return value


class AtConcurrency(Record):
    concurrency: Concurrency
    temperature: OptTemperature = None
    category: OptText = None
    input_band: OptText = None  # banded by input length: the band these points measured
    best: OptStepId = None
    best_lookahead: OptLookahead = None
    best_decided: Union[bool, None] = None
    speculation: Union[Literal["faster", "slower", "undecided"], None] = Field(
        default=None, description="faster, slower or undecided")
    best_by_acceptance: OptStepId = None
    baseline: OptStepId = None
    baseline_output_throughput: OptThroughput = None
    fastest: OptStepId = None
    rows: listed(Row, MAX_LIST, "rows (mappings)")
    without_speculation: listed(Row, MAX_LIST, "rows (mappings)") = []


class Band(Record):
    first: Concurrency
    last: Concurrency
    k: Lookahead


Range3 = Annotated[list[Annotated[int, Field(ge=0, le=1_000_000)]], Field(
    min_length=3, max_length=3, description="three whole numbers from 0 to 1,000,000")]


class Schedule(Record):
    """A lookahead schedule derived from the points: schedule.json, and each of sweep.json's ``schedules``."""

    draft: Text
    schedule: listed(Range3, MAX_LIST, "[first, last, k] ranges")
    lookahead: OptLookahead = None
    override: OptSentence = None
    bands: listed(Band, MAX_LIST, "bands (mappings)") = []
    from_points: listed(StepId, MAX_LIST, "points") = []
    missing: listed(StepId, MAX_LIST, "points") = []


class InputBandSpan(Record):
    low: Count
    high: Count
    label: Text


class InputBreak(Record):
    """Where speculation stops paying over the input-length bands at one concurrency (``analysis.bands``)."""

    concurrency: Concurrency
    paying: listed(Text, MAX_LIST, "bands")
    after: Union[InputBandSpan, None] = None
    before: Union[InputBandSpan, None] = None
    slower: listed(Text, MAX_LIST, "bands") = []
    sentence: Sentence
    routing: OptSentence = None


class InputBands(Record):
    bands: listed(InputBandSpan, MAX_LIST, "bands (mappings)")
    breaks: listed(InputBreak, MAX_LIST, "breaks (mappings)") = []


class SweepRecord(Record):
    """sweep.json: the sweep's analysis (``sweep.to_json.to_record``) with its plots and design."""

    verdict: OptSentence = None
    pays_up_to: OptConcurrency = None
    stops_paying_at: OptConcurrency = None
    temperatures: listed(Temperature, 64, "temperatures") = []
    schedules: listed(Schedule, 1024, "schedules (mappings)") = []
    concurrency: listed(AtConcurrency, MAX_LIST, "concurrencies (mappings)")
    input_bands: Union[InputBands, None] = None  # banded by input length


SWEEP = Expect("sweep analysis", "it is not a sweep.json this tool wrote; run `llama4spec report` on the run again",
               RECORD_BYTES)


def read_sweep(path: Path) -> SweepRecord:
    return read_model(SweepRecord, path, SWEEP)


register(Entry("<sweep step>/sweep.json", SweepRecord, "llama4spec.sweep/1",
               "a sweep's report writes it; breakeven --draft-from (draft_from) reads its rows back", read_sweep))
