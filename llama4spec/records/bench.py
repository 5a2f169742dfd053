"""The models of a bench step's records (``records.base``): its ``record.json`` (``results.bench``
writes it: vLLM's result, the acceptance counters, its runs, its stop reason, its requests) and its
``summary.json`` (the points in vLLM's sweep format; a capacity probe writes one too). Every number
is finite and bounded: a throughput in [0, 1e9] per second (a counted run's in [1e-6, 1e9]: its log
ratio to another must not fail), latencies in [0, 1e9] ms, counts in [0, 1e12], an acceptance length
in [1, k+1] where the lookahead k is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union, get_args, get_origin

from pydantic import BaseModel, Field, RootModel, ValidationError, create_model, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from llama4spec.errors import UserError
from llama4spec.files import shown
from llama4spec.records.base import MAX_TEXT, Record
from llama4spec.records.registry import Entry, register

KIND = "llama4spec.bench"
MAX_RATE, MIN_RATE = 1e9, 1e-6  # per second
MAX_MS = 1e9
MAX_S = 1e9
MAX_COUNT = 10**12
MAX_POSITIONS = 64  # speculative positions (vLLM's k)
MAX_RUNS = 1000  # counted runs of one point (repeats over server starts)
MAX_REQUESTS = 200_000  # requests one run may keep
MAX_ARG = 100_000  # one argv item (a --speculative-config JSON, a path)
MAX_LINE = 10_000
FIX = "it is not a record this tool wrote whole; run the step again (--resume)"
WRITE_FIX = "the benchmark's figures are beyond what a record holds; nothing was written, run the step again"

Rate = Annotated[float, Field(ge=0, le=MAX_RATE, description="a throughput from 0 to 1e9 per second")]
Ms = Annotated[float, Field(ge=0, le=MAX_MS, description="milliseconds from 0 to 1e9")]
SignedMs = Annotated[float, Field(ge=-MAX_MS, le=MAX_MS, description="milliseconds from -1e9 to 1e9")]
Seconds = Annotated[float, Field(ge=0, le=MAX_S, description="seconds from 0 to 1e9")]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT, description="a whole number from 0 to 1e12")]
Share = Annotated[float, Field(ge=0, le=1, description="a share from 0 to 1")]
Length = Annotated[float, Field(ge=1, le=MAX_POSITIONS + 1, description="an acceptance length from 1 to 65")]
Name = Annotated[str, Field(max_length=MAX_TEXT, description=f"text of at most {MAX_TEXT} characters")]
Line = Annotated[str, Field(max_length=MAX_LINE, description=f"text of at most {MAX_LINE} characters")]
Arg = Annotated[str, Field(max_length=MAX_ARG, description=f"an argument of at most {MAX_ARG} characters")]
Positions = Annotated[list[Count], Field(max_length=MAX_POSITIONS, description="at most 64 counts, one a position")]
Rates = Annotated[list[Share], Field(max_length=MAX_POSITIONS, description="at most 64 shares, one a position")]


def rule_error(field: str, value: Any, rule: str) -> PydanticCustomError:
    """A rule across fields (a model validator's), named by its field: ``problem`` prints it as
    ``'field' is value, not rule``."""
    return PydanticCustomError("record_rule", "{field} is {value}, not {rule}",
                               {"field": field, "value": shown(value), "rule": rule})


def _bare(tp: Any) -> tuple[Any, str | None]:
    """``tp`` without Optional and Annotated, and the description an Annotated Field gave it."""
    said = None
    while True:
        if get_origin(tp) is Annotated:
            said = next((m.description for m in tp.__metadata__ if isinstance(m, FieldInfo) and m.description), said)
            tp = get_args(tp)[0]
        elif get_origin(tp) is Union and len([a for a in get_args(tp) if a is not type(None)]) == 1:
            tp = next(a for a in get_args(tp) if a is not type(None))
        else:
            return tp, said


def rule_of(model: Any, loc: tuple[Any, ...]) -> str | None:
    """The rule in words (a ``description``) of the value at ``loc``: a field's, a list item's, a
    mapping value's, found through Optional and Annotated."""
    tp, said = model, None
    for part in loc:
        tp, inner = _bare(tp)
        said = inner or said
        if isinstance(tp, type) and issubclass(tp, RootModel):
            tp, said = tp.model_fields["root"].annotation, None
            tp, said = _bare(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str) and part in tp.model_fields:
            info = tp.model_fields[part]
            tp, said = info.annotation, info.description
        elif get_origin(tp) is list and isinstance(part, int):
            tp, said = get_args(tp)[0], None
        elif get_origin(tp) is dict and isinstance(part, str):
            tp, said = get_args(tp)[1], None
    tp, inner = _bare(tp)
    return inner or said


def problem(model: type[Record], err: ValidationError) -> str:
    """The first problem of ``err`` in one line: ``'field' is value, not rule`` (a list index in
    brackets: ``runs[1].result.output_throughput``)."""
    first = err.errors(include_url=False)[0]
    loc = tuple(first["loc"])
    field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    if first["type"] == "record_rule":
        ctx = first.get("ctx") or {}
        field = ".".join(x for x in (field, ctx.get("field", "")) if x)
        return f"'{field or 'the record'}' is {ctx.get('value')}, not {ctx.get('rule')}"
    if first["type"] == "missing":
        return f"'{field}' is missing"
    rule = rule_of(model, loc)
    if rule is None:
        return f"'{field or 'the record'}' is {shown(first.get('input'))}: {first['msg'][:1].lower()}{first['msg'][1:]}"
    return f"'{field or 'the record'}' is {shown(first.get('input'))}, not {rule}"


def validated(model: type[Record], data: Any, where: str, fix: str = FIX) -> Any:
    """``data`` through ``model``, or UserError ``where: 'field' is value, not rule; fix``."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise UserError(f"{where}: {problem(model, err)}; {fix}") from None


class Acceptance(Record):
    """The acceptance counters (``AcceptanceCounters.to_record``); older records kept only the rates."""

    num_drafts: Optional[Count] = None
    num_draft_tokens: Optional[Count] = None
    num_accepted_tokens: Optional[Count] = None
    accepted_per_pos: Optional[Positions] = None
    drafted_per_pos: Optional[Positions] = None
    draft_tokens_per_draft: Optional[Annotated[float, Field(
        ge=0, le=MAX_POSITIONS, description="draft tokens per draft from 0 to 64")]] = None
    mean_acceptance_length: Optional[Length] = None
    acceptance_rate: Optional[Share] = None
    acceptance_rate_per_position: Optional[Rates] = None
    acceptance_rate_per_drafted_position: Optional[Annotated[list[Optional[Share]], Field(
        max_length=MAX_POSITIONS, description="at most 64 shares (or null), one a position")]] = None


class PrefixCacheCounts(Record):
    """The server's prefix-cache counters around a run (``results.prefix_cache.PrefixCache.to_record``):
    prompt tokens looked up and those found."""

    queries: Count
    hits: Count
    hit_rate: Optional[Share] = None

    @model_validator(mode="after")
    def _hits_within_queries(self) -> "PrefixCacheCounts":
        if self.hits > self.queries:
            raise rule_error("hits", self.hits, f"at most the {self.queries} tokens looked up (queries)")
        return self


LATENCIES = tuple(f"{stat}_{metric}_ms" for metric in ("ttft", "tpot", "itl", "e2el")
                  for stat in ("mean", "median", "std", "p50", "p90", "p95", "p99"))
RESULT_FIELDS: dict[str, Any] = {
    **{key: (Optional[Rate], None) for key in ("output_throughput", "total_token_throughput", "request_throughput",
                                                "request_goodput")},
    **{key: (Optional[Count], None) for key in ("completed", "failed", "total_input_tokens", "total_output_tokens")},
    "max_concurrency": (Optional[Annotated[int, Field(ge=1, le=10**6, description="a concurrency from 1 to 1e6")]], None),
    "duration": (Optional[Seconds], None),
    "spec_decode_acceptance_length": (Optional[Length], None),
    "spec_decode_per_position_acceptance_rates": (Optional[Rates], None),
    **{key: (Optional[Ms], None) for key in LATENCIES},
}
# vLLM's result JSON: the numbers the tool reads (by name: ``BenchRecord.figure``); its other keys are
# kept as they are, unread here. Made from the list of its fields (they are read by their key).
Result = create_model("Result", __base__=Record, **RESULT_FIELDS)


class Rule(Record):
    min_repeats: Annotated[int, Field(ge=2, le=100, description="repeats from 2 to 100")]
    max_repeats: Annotated[int, Field(ge=2, le=100, description="repeats from 2 to 100")]
    confidence: Annotated[float, Field(gt=0.5, lt=1, description="a confidence between 0.5 and 1")]


class Stop(Record):
    """Why a point measured until decided stopped, after how many runs, and its verdict."""

    reason: Name
    runs: Optional[Count] = None
    verdict: Optional[Name] = None
    starts: Optional[Annotated[int, Field(ge=0, le=10**6, description="server starts from 0 to 1e6")]] = None
    rule: Optional[Rule] = None


class Request(Record):
    """One request of one run (``results.requests.RequestRow``)."""

    id: Annotated[str, Field(min_length=1, max_length=200, description="a request id of 1 to 200 characters")]
    ok: bool
    index: Optional[Count] = None
    category: Optional[Name] = None
    ttft_ms: Optional[Ms] = None
    tpot_ms: Optional[Ms] = None
    e2e_ms: Optional[Ms] = None
    queue_ms: Optional[SignedMs] = None
    arrival_ms: Optional[SignedMs] = None
    output_tokens: Optional[Count] = None
    drafts: Optional[Count] = None
    draft_tokens: Optional[Count] = None
    accepted: Optional[Count] = None
    accepted_per_pos: Optional[Positions] = None
    prompt_sha256: Optional[Annotated[str, Field(max_length=64, description="a SHA-256 of 64 hex digits")]] = None
    drafted_per_pos: Optional[Positions] = None


class BenchRun(Record):
    """One run of a point as its record holds it (``results.bench.BenchRecord.to_dict`` of a run)."""

    kind: Literal["llama4spec.bench"] = Field(description="a bench record (kind: llama4spec.bench)")
    label: Optional[Name] = None
    url: Optional[Line] = None
    argv: Annotated[list[Arg], Field(max_length=10_000, description="at most 10,000 arguments")] = []
    returncode: Optional[Annotated[int, Field(ge=-255, le=255, description="an exit code from -255 to 255")]] = None
    wall_time_s: Optional[Seconds] = None
    lookahead: Optional[Annotated[int, Field(ge=0, le=MAX_POSITIONS, description="a lookahead from 0 to 64")]] = None
    acceptance: Optional[Acceptance] = None
    result: Optional[Result] = None
    warmup: Optional[Count] = None
    models: Annotated[dict[Name, Name], Field(max_length=100, description="at most 100 model fingerprints")] = {}
    category_prompts: Optional[Count] = None
    stop: Optional[Stop] = None
    start: Annotated[int, Field(ge=1, le=100, description="a server start from 1 to 100")] = 1
    pair: Optional[Annotated[str, Field(min_length=1, max_length=200, description="a step id of 1 to 200 characters")]] = None
    started: Optional[Annotated[float, Field(ge=0, le=1e11, description="seconds since the epoch from 0 to 1e11")]] = None
    client_cpu_s: Optional[Seconds] = None
    requests: Annotated[list[Request], Field(max_length=MAX_REQUESTS, description="at most 200,000 requests")] = []
    prefix_cache: Optional[PrefixCacheCounts] = None

    @model_validator(mode="after")
    def _within_lookahead(self) -> "BenchRun":
        """The acceptance length (recorded, and as its counters give it) lies in [1, k+1]."""
        a, k = self.acceptance, self.lookahead
        if a is None or not k:
            return self
        rule = f"an acceptance length from 1 to {k + 1} (lookahead {k} + 1)"
        if a.mean_acceptance_length is not None and a.mean_acceptance_length > k + 1 + 1e-9:
            raise rule_error("acceptance.mean_acceptance_length", a.mean_acceptance_length, rule)
        if a.num_drafts and a.num_accepted_tokens is not None and a.num_accepted_tokens > k * a.num_drafts:
            raise rule_error("acceptance.num_accepted_tokens", a.num_accepted_tokens,
                             f"at most {k} accepted tokens a draft ({rule})")
        return self

    @property
    def counted(self) -> bool:
        return self.returncode == 0 and bool(self.result is not None and self.result.completed)


class Bench(BenchRun):
    """A bench step's record.json (``results.bench.BenchRecord.to_dict``): a point, with its counted runs
    when it was measured more than once."""

    runs: Annotated[list[BenchRun], Field(max_length=MAX_RUNS, description=f"at most {MAX_RUNS} runs")] = []


RATES = ("output_throughput", "total_token_throughput", "request_throughput")


def rate_problem(record: Bench) -> str | None:
    """The first rate of a counted run (or of its medians) that is no throughput: not in [MIN_RATE,
    MAX_RATE] (0, 5e-324: its log ratio to another would fail or overflow)."""
    for name, run in [("result", record), *((f"runs[{i}].result", r) for i, r in enumerate(record.runs))]:
        for key in RATES if run.counted else ():
            value = getattr(run.result, key)
            if value is not None and value < MIN_RATE:
                return f"'{name}.{key}' is {shown(value)}, not a throughput from {MIN_RATE:g} to {MAX_RATE:g} per second"
    return None


def check(data: Any, where: str, fix: str = FIX) -> Bench:
    """A bench record through its model and the rate rule: UserError (one line) for a damaged one."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UserError(f"{where}: not a llama4spec bench record (no \"kind\": \"{KIND}\"); {fix}")
    model = validated(Bench, data, where, fix)
    bad = rate_problem(model)
    if bad is not None:
        raise UserError(f"{where}: {bad}; {fix}")
    return model


def read(path: Path) -> Bench:
    """A bench step's record.json read back: the model, or UserError naming the file, field and rule."""
    from llama4spec.files import plain, read_json

    return check(read_json(Path(path)), plain(str(path)))


register(Entry("<bench step>/record.json", Bench, "llama4spec.bench/1",
               "a bench step writes it (results.bench); report, resume, compare, calibrate and the capacity "
               "report read it back", read))
