"""The model of the losslessness record, lossless.json (``records.base``): ``record.LosslessRecord``
validates its data through it before it writes, and ``read`` (``regress --fail-on-lossless``, the
report page) reads one back through it: a damaged field is one line naming the file, the field and
the rule. p-values and shares are in [0, 1], a test's level in (0, 1), temperatures in [0, 100] (the
check takes any temperature of 0 or more), counts whole numbers from 0 to 1e12."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import Field

from llama4spec.files import Expect
from llama4spec.records.base import MAX_TEXT, Record
from llama4spec.records.io import read_model
from llama4spec.records.registry import Entry, register
from llama4spec.records.shapes import listed, maybe

KIND = "lossless"
SCHEMA = "llama4spec.lossless/2"
FILE = "lossless.json"
READ = Expect("lossless record", "it is not a lossless record this tool wrote", 16 << 20)
MAX_TESTS = 1000  # tests, categories, counts of a test
MAX_REQUESTS = 1_000_000  # divergences listed (at most one a request)

Text = Annotated[str, Field(max_length=MAX_TEXT, description=f"text of at most {MAX_TEXT} characters")]
Url = Annotated[str, Field(max_length=4096, description="a URL of at most 4096 characters")]
P = Annotated[float, Field(ge=0, le=1, description="a p-value from 0 to 1")]
Share = Annotated[float, Field(ge=0, le=1 + 1e-9, description="a share from 0 to 1")]
Level = Annotated[float, Field(gt=0, lt=1, description="a level between 0 and 1")]
Count = Annotated[int, Field(ge=0, le=10**12, description="a whole number from 0 to 1e12")]
Temperature = Annotated[float, Field(ge=0, le=100, description="a temperature from 0 to 100")]
Nats = Annotated[float, Field(ge=0, le=1e9, description="nats from 0 to 1e9")]
Statistic = Annotated[float, Field(ge=0, le=1e15, description="a test statistic from 0 to 1e15")]
Seconds = Annotated[float, Field(ge=0, le=1e6, description="seconds from 0 to 1e6")]
TopK = Annotated[int, Field(ge=-1, le=10**9, description="a top-k from -1 (off) to 1e9")]
Verdict = Literal["pass", "lossy"]


OptNats, OptShare, OptTopK, OptUrl, OptP = maybe(Nats), maybe(Share), maybe(TopK), maybe(Url), maybe(P)
OptText, OptTemperature, OptStatistic, OptLevel = maybe(Text), maybe(Temperature), maybe(Statistic), maybe(Level)
OptLookahead = maybe(Annotated[int, Field(ge=0, le=64, description="a lookahead from 0 to 64")])
Counts = listed(Count, MAX_TESTS, "counts")
Shares = listed(Share, MAX_TESTS, "shares")
Temperatures = listed(Temperature, 64, "temperatures")
Tokens, Names = listed(Count, 2, "token counts"), listed(Text, MAX_TESTS, "names")
OptCounts, OptShares = maybe(Counts), maybe(Shares)
Starts = listed(Seconds, 100, "engine starts")


class Settings(Record):
    temperatures: Temperatures
    samples: Count
    level: Level
    wide_gap: OptNats = None
    top_p: OptShare = None
    top_k: OptTopK = None
    url: OptUrl = None


class Divergence(Record):
    request: Count
    position: Count
    gap: OptNats = None


Divergences = listed(Divergence, MAX_REQUESTS, "divergences")


class Greedy(Record):
    requests: Count
    diverged: Divergences
    baseline_diverged: Divergences = []
    p_value: P
    level: Level
    wide: Divergences = []
    verdict: Verdict = Field(description="pass or lossy")


class Sampling(Record):
    temperature: OptTemperature = None
    top_p: OptShare = None
    top_k: OptTopK = None


class FitP(Record):
    draft: OptP = None
    control: OptP = None


class Control(Record):
    """The context-conditioned test's control run and the deviations it finds with 80% power."""

    counts: Counts = []
    expected: Shares = []
    tokens: Tokens = []
    fit_p: Union[FitP, None] = None
    sharp: OptShare = None
    flat: OptShare = None
    tv: OptShare = None
    tail_bound: OptShare = None


class SampledTest(Record):
    temperature: Temperature
    test: Literal["context-conditioned", "exact multinomial"] = Field(
        description="context-conditioned or exact multinomial")
    requests: Count
    categories: Names = []
    counts: OptCounts = None
    expected: OptShares = None
    statistic: OptStatistic = None
    p_value: P
    level: Level
    detectable: OptShare = None
    verdict: Verdict = Field(description="pass or lossy")
    draws: Count = 0
    sampling: Sampling = Field(default=Sampling(), description="a mapping (the test's sampling parameters)")
    control: Control = Field(default=Control(), description="a mapping (the control run)")


Tests = listed(SampledTest, MAX_TESTS, "tests (mappings)")


class LosslessFile(Record):
    """lossless.json."""

    kind: Literal["lossless"] = Field(description="a lossless record (kind: lossless)")
    schema_: OptText = Field(None, alias="schema")
    created: OptText = None
    target: Text
    draft: OptText = None
    lookahead: OptLookahead = None
    settings: Settings = Field(description="a mapping (the check's settings)")
    tests: Count = 0
    level_per_test: OptLevel = None
    verdict: Verdict = Field(description="pass or lossy")
    greedy: Union[Greedy, None] = Field(None, description="a mapping (the greedy comparison), or null")
    sampled: Tests
    engine_start_s: Starts = []


def read(path: Path) -> LosslessFile:
    """A lossless record read back through its model; UserError, one line naming the file, the field
    and the rule."""
    return read_model(LosslessFile, path, READ)


register(Entry(f"<lossless step>/{FILE}", LosslessFile, SCHEMA,
               "llama4spec lossless (a lossless step) writes it; regress --fail-on-lossless and the report page "
               "read it back", read))
