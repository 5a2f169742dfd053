"""The models of the noise records read back (``records.base``): noise.json (``llama4spec calibrate``
writes it) and the noise prior a plan records. Every number is finite and bounded, so no component
squared, no cost divided by another, overflows: a log-sd in [0, 10] (a factor of e^10 between runs,
far beyond any measurement), degrees of freedom in [0, 1e6], a cost in [1e-6, 1e6] seconds."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field

from llama4spec.records.base import MAX_TEXT, Record, problem

MAX_SD = 10.0
MAX_DF = 1e6
MIN_COST_S, MAX_COST_S = 1e-6, 1e6
MAX_COUNT = 1_000_000

SD = Annotated[float, Field(ge=0, le=MAX_SD, description="a log-sd from 0 to 10")]
DF = Annotated[float, Field(ge=0, le=MAX_DF, description="degrees of freedom from 0 to 1e6")]
Seconds = Annotated[float, Field(ge=MIN_COST_S, le=MAX_COST_S, description="seconds from 1e-06 to 1e6")]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT, description="a whole number from 0 to 1,000,000")]
Name = Annotated[str, Field(max_length=MAX_TEXT, description=f"text of at most {MAX_TEXT} characters")]


class ComponentRecord(Record):
    sd: SD
    df: DF


class Costs(Record):
    start_s: Seconds
    run_s: Seconds


class FingerprintRecord(Record):
    vllm_version: Name
    vllm_build: Name
    device: Name
    device_detail: Name
    target: Name
    tensor_parallel_size: Count
    concurrency: Count


class AACheckRecord(Record):
    pairs: Count
    declared: Count
    confidence: Annotated[float, Field(gt=0.5, lt=1, description="a confidence between 0.5 and 1")] = 0.95
    equivalent: Count = 0
    margin: Annotated[float, Field(ge=0, lt=1, description="a margin from 0 to below 1")] = 0.02


class ProfileRecord(Record):
    """noise.json."""

    kind: Literal["noise profile"] = Field(description="a noise profile (kind: noise profile)")
    format: Literal[1] = Field(description="format 1, the one this version reads")
    design: Literal["sequential", "back_to_back"] = Field(description="sequential or back_to_back")
    starts: Count = 0
    runs: Count = 0
    between: ComponentRecord
    within: ComponentRecord
    paired: Union[ComponentRecord, None] = None
    n0: Annotated[float, Field(gt=0, le=MAX_DF, description="runs per start above 0, at most 1e6")] = 1.0
    costs: Costs
    fingerprint: FingerprintRecord
    aa_check: Union[AACheckRecord, None] = None


class PriorComponent(Record):
    sd: SD
    df: Union[Literal["known"], DF] = Field(description="degrees of freedom from 0 to 1e6, or known")
    source: str


class PriorRecord(Record):
    """A noise prior as a plan records it (``stats.noise.noise_record``)."""

    between: PriorComponent
    within: PriorComponent
    paired: Union[PriorComponent, None] = None
    provisional: Union[str, None] = None


def prior_problem(data: Any) -> str | None:
    """Why ``data`` is no recorded noise prior (one clause naming the field and the rule), else None."""
    from pydantic import ValidationError

    try:
        PriorRecord.model_validate(data)
    except ValidationError as err:
        return problem(PriorRecord, err)
    return None

