"""The models of a capacity step's records (``records.base``): ``search.json`` (a search step writes
it after every run and reads it back on resume; ``report`` and report.html read it again) and
``capacity.json`` (the capacity step's analysis, written by ``write_report``; nothing reads it back,
so its writer validates it). Every number is finite and bounded: a probed rate above 0 and at most
1e4 requests per second, an attainment in [0, 1], thresholds in (0, 1e9] ms, counts in [0, 1e12]."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import Field

from llama4spec.errors import UserError
from llama4spec.records.base import Record
from llama4spec.records.bench import Count, Line, Name, Rate, Seconds, Share, validated
from llama4spec.records.registry import Entry, register

MAX_RATE = 10_000.0  # capacity.probing.MAX_RATE: the highest rate a probe may ask for
MAX_PROBES = 64  # capacity.probing.MAX_PROBES (a fitted search repeats rates: runs a probe too)
MAX_NOTES = 100
KIND = "llama4spec.capacity_search"
FIX = "run the capacity step again (--resume), or remove the file to leave that setting out"

Metric = Literal["ttft", "tpot", "e2el"]
Verdict = Literal["open", "holds", "fails", "undecided", "leans to holding", "leans to failing"]
ProbeRate = Annotated[float, Field(gt=0, le=MAX_RATE, description="a request rate above 0, at most 1e4 per second")]
Estimate = Annotated[float, Field(ge=0, le=1e9, description="a request rate from 0 to 1e9 per second")]
Threshold = Annotated[float, Field(gt=0, le=1e9, description="milliseconds above 0, at most 1e9")]
Factor = Annotated[float, Field(gt=0, le=1e6, description="a factor above 0, at most 1e6")]
Confidence = Annotated[float, Field(gt=0.5, lt=1, description="a confidence between 0.5 and 1")]
Ms = Annotated[float, Field(ge=0, le=1e9, description="milliseconds from 0 to 1e9")]
Notes = Annotated[list[Line], Field(max_length=MAX_NOTES, description=f"at most {MAX_NOTES} lines")]
Small = Annotated[int, Field(ge=0, le=10**6, description="a whole number from 0 to 1e6")]


class Settings(Record):
    """A search's settings (``capacity.probing.Settings``); how they combine is checked there."""

    start: ProbeRate
    target: Optional[Annotated[float, Field(gt=0, lt=1, description="an attainment between 0 and 1")]] = None
    precision: Optional[Annotated[float, Field(ge=0.01, le=1, description="a precision from 0.01 to 1")]] = None
    cap: Optional[ProbeRate] = None
    floor: Optional[Annotated[float, Field(ge=0.01, le=MAX_RATE, description="a request rate from 0.01 to 1e4")]] = None
    min_runs: Optional[Annotated[int, Field(ge=2, le=20, description="runs from 2 to 20")]] = None
    max_runs: Optional[Annotated[int, Field(ge=2, le=20, description="runs from 2 to 20")]] = None
    lean_runs: Optional[Annotated[int, Field(ge=1, le=20, description="runs from 1 to 20")]] = None
    max_probes: Optional[Annotated[int, Field(ge=1, le=MAX_PROBES, description="probes from 1 to 64")]] = None
    confidence: Optional[Confidence] = None
    confirm: Optional[Annotated[float, Field(gt=1, le=1e3, description="a factor above 1, at most 1000")]] = None
    early_share: Optional[Annotated[float, Field(ge=0, lt=1, description="a share from 0 to below 1")]] = None


class Run(Record):
    """One run at a probe's rate (``capacity.probing.Run``)."""

    attainment: Share
    requests: Annotated[int, Field(ge=1, le=10**12, description="requests sent from 1 to 1e12")]
    binding: Optional[Metric] = None
    output_throughput: Optional[Rate] = None
    client_cpu_s: Optional[Seconds] = None
    per_metric: Optional[Annotated[dict[Metric, Share], Field(description="a share from 0 to 1 a metric")]] = None


class Probe(Record):
    rate: ProbeRate
    runs: Annotated[list[Run], Field(min_length=1, max_length=MAX_PROBES, description="1 to 64 runs")]
    why: Optional[Line] = None
    verdict: Optional[Verdict] = Field(None, description="open, holds, fails, undecided or a leaning")
    attainment: Optional[Share] = None
    interval: Optional[Annotated[list[Share], Field(min_length=2, max_length=2, description="two shares")]] = None
    level: Optional[Share] = None
    p_holds: Optional[Share] = None
    p_fails: Optional[Share] = None
    binding: Optional[Metric] = None


class Next(Record):
    rate: Optional[Estimate] = None
    why: Optional[Line] = None


class Answer(Record):
    """The search's answer so far (``capacity.probing.Capacity``)."""

    rate: Optional[Estimate] = None
    high: Optional[Estimate] = None
    output_throughput: Optional[Rate] = None
    binding: Optional[Metric] = None
    done: Optional[bool] = None
    stopped: Optional[Line] = None
    undecided: Annotated[list[Estimate], Field(max_length=MAX_PROBES, description="at most 64 rates")] = []
    probes: Optional[Small] = None
    runs: Optional[Small] = None
    notes: Notes = []


class Slo(Record):
    """The SLO as search.json resolved it."""

    name: Optional[Name] = None
    attainment: Optional[Annotated[float, Field(gt=0, lt=1, description="an attainment between 0 and 1")]] = None
    relative_to: Optional[Name] = None
    multipliers: Optional[dict[Metric, Factor]] = None
    medians: Optional[dict[Metric, Ms]] = None


class Fit(Record):
    """A fitted search's answer after its runs (``strategies.fit.FitSearch.document``): informative; a reader refits."""

    estimate: Optional[Estimate] = None
    half_width: Optional[Annotated[float, Field(ge=0, le=1e9, description="a half-width from 0 to 1e9")]] = None
    confidence: Optional[Confidence] = None
    shape_fits: Optional[bool] = None
    shape: Optional[Line] = None
    isotonic: Optional[Estimate] = None
    isotonic_words: Optional[Line] = None
    runs: Optional[Small] = None
    binding: Optional[Metric] = None


class Search(Record):
    """search.json (``search.document``)."""

    kind: Literal["llama4spec.capacity_search"] = Field(description="a capacity search (kind: llama4spec.capacity_search)")
    version: Optional[Literal[1]] = Field(None, description="version 1, the one this version reads")
    settings: Settings
    probes: Annotated[list[Probe], Field(max_length=MAX_PROBES, description="at most 64 probes")] = []
    next: Optional[Next] = None
    capacity: Optional[Answer] = None
    thresholds: dict[Metric, Threshold] = Field({}, description="milliseconds above 0, at most 1e9, a metric")
    slo: Slo = Slo()
    search: Optional[Literal["fit", "bisect"]] = Field(None, description="fit or bisect")
    fit: Optional[Fit] = None


def check(data: Any, where: str, fix: str = FIX) -> Search:
    """search.json's content through its model: UserError ``where: 'field' is value, not rule; fix``."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UserError(f"{where}: not a capacity search (kind {KIND!r} expected); {fix}")
    return validated(Search, data, where, fix)


def read(path: Path) -> Search:
    """A search.json read back: the model, or UserError naming the file, the field and the rule."""
    from llama4spec.files import plain, read_json

    return check(read_json(Path(path)), plain(str(path)))


# -- capacity.json ----------------------------------------------------------------------------------

class Gain(Record):
    ratio: Optional[Annotated[float, Field(ge=0, le=1e9, description="a ratio from 0 to 1e9")]] = None
    low: Optional[Annotated[float, Field(ge=0, le=1e9, description="a ratio from 0 to 1e9")]] = None
    high: Optional[Annotated[float, Field(ge=0, le=1e9, description="a ratio from 0 to 1e9")]] = None
    starts_share: Optional[Share] = None


class Setting(Record):
    """One setting's capacity (``capacity.tables``: a fitted or a bisecting search's)."""

    search: Literal["fit", "bisect"] = Field(description="fit or bisect")
    rate: Optional[Estimate] = None
    low: Optional[Estimate] = None
    high: Optional[Estimate] = None
    binding: Optional[Metric] = None
    done: bool
    stopped: Line
    probes: Small
    runs: Small
    error_bound: Optional[Share] = None
    notes: Notes = []
    output_tps: Annotated[list[Optional[Rate]], Field(max_length=2, description="at most two throughputs")] = []
    sentence: Line
    gain: Optional[Gain] = None
    client_cpu_s: Optional[Seconds] = None


class Between(Record):
    sd: Annotated[float, Field(ge=0, le=10, description="a log-sd from 0 to 10")]
    source: Line


Devices = Annotated[int, Field(ge=1, le=10**9, description="devices from 1 to 1e9")]
Price = Annotated[float, Field(ge=0, le=1e12, description="a price from 0 to 1e12")]


class DemandSetting(Record):
    devices_per_server: Devices
    output_tps: Optional[Annotated[float, Field(gt=0, le=1e9, description="a throughput above 0, at most 1e9")]] = None
    price_per_million: Optional[Price] = None
    servers: Optional[Devices] = None
    devices: Optional[Devices] = None
    devices_interval: Annotated[list[Optional[Devices]], Field(max_length=2, description="[low, high]")] = []


class Saved(Record):
    devices: Optional[Annotated[int, Field(ge=-10**9, le=10**9, description="devices from -1e9 to 1e9")]] = None
    interval: Annotated[list[Optional[Annotated[int, Field(ge=-10**9, le=10**9)]]],
                        Field(max_length=2, description="[low, high]")] = []


class Demand(Record):
    """A capacity step's load and price (``capacity.demand``)."""

    load: Optional[Annotated[float, Field(gt=0, le=1e6, description="a request rate above 0, at most 1e6")]] = None
    price: Optional[Annotated[float, Field(ge=0, le=1e6, description="a price from 0 to 1e6")]] = None
    device: Literal["GPU", "device"]
    settings: Annotated[dict[Name, DemandSetting], Field(max_length=1000, description="at most 1000 settings")]
    saved: Annotated[dict[Name, Saved], Field(max_length=1000, description="at most 1000 settings")] = {}
    lines: Notes = []


Ratio = Annotated[float, Field(ge=0, le=1e9, description="a ratio from 0 to 1e9")]
Tokens = Annotated[int, Field(ge=1, le=10**7, description="prompt tokens from 1 to 1e7")]


class Band(Record):
    low: Tokens
    high: Tokens
    label: Line


class BandGain(Record):
    """One band's best speculative gain and its verdict (``capacity.bands``)."""

    band: Line
    best: Optional[Name] = None
    ratio: Optional[Ratio] = None
    low: Optional[Ratio] = None
    high: Optional[Ratio] = None
    verdict: Literal["more", "less", "undecided", "not measured"]


class InputBands(Record):
    """A capacity step banded by input length: its bands, each band's verdict, the break and routing."""

    bands: Annotated[list[Band], Field(max_length=16, description="at most 16 bands")]
    gains: Annotated[list[BandGain], Field(max_length=16, description="at most 16 bands")]
    sentence: Line
    routing: Optional[Line] = None


class BlockGain(Record):
    """One setting's gain over no speculation from its back-to-back blocks (``capacity.blocks``)."""

    name: Name
    blocks: Annotated[list[Ratio], Field(max_length=20, description="at most 20 blocks' gains")]
    ratio: Optional[Ratio] = None
    low: Optional[Ratio] = None
    high: Optional[Ratio] = None
    verdict: Literal["more", "less", "undecided"]


class Blocks(Record):
    """A capacity step in back-to-back blocks: each setting's gain from its blocks, and the sentence."""

    gains: Annotated[list[BlockGain], Field(max_length=1000, description="at most 1000 settings")]
    sentence: Line


class Capacity(Record):
    """capacity.json (``write_report.analyse``'s record)."""

    kind: Literal["llama4spec.capacity"] = Field(description="a capacity analysis (kind: llama4spec.capacity)")
    version: Literal[2] = Field(description="version 2, the one this version writes")
    slo: Line
    baseline: Optional[Name] = None
    headline: Optional[Line] = None
    settings: Annotated[dict[Name, Setting], Field(max_length=1000, description="at most 1000 settings")]
    missing: Annotated[dict[Name, Line], Field(max_length=1000, description="at most 1000 settings")] = {}
    between: Optional[Between] = None
    thresholds: dict[Metric, Threshold] = Field({}, description="milliseconds above 0, at most 1e9, a metric")
    resolved: Slo = Slo()
    warnings: Notes = []
    demand: Optional[Demand] = None
    input_bands: Optional[InputBands] = None  # banded: each setting's name ends in its band
    blocks: Optional[Blocks] = None  # in back-to-back blocks: each setting's name ends in its block


def checked_capacity(data: dict[str, Any], where: str) -> dict[str, Any]:
    """capacity.json's record when its model takes it (the writer writes ``data`` itself), else UserError."""
    from llama4spec.files import finite

    validated(Capacity, finite(data), where, "a bug: the analysis gave a record outside its bounds; please report it")
    return data


def read_capacity(path: Path) -> Capacity:
    """A capacity.json read: the model, or UserError naming the file, the field and the rule."""
    from llama4spec.files import plain, read_json

    return validated(Capacity, read_json(Path(path)), plain(str(path)), "run `llama4spec report` on the run again")


register(Entry("<search step>/search.json", Search, "llama4spec.capacity_search/1",
               "a capacity search step writes it after every run; a resumed search, `report` and report.html read "
               "it back", read))
register(Entry("<capacity step>/capacity.json", Capacity, "llama4spec.capacity/2",
               "a capacity step (and `report`) writes it, validated; the tool does not read it back", read_capacity))
