"""The model of a bench step's ``summary.json`` (``records.base``): its points in vLLM's sweep format
(what ``vllm bench sweep plot`` reads), one entry a run: vLLM's result (``records.bench.Result``'s
bounds) with the point's settings (``runbook.rundir.vllm_runs``); a capacity probe's adds the rate
asked for, the users in flight and the parallel sizes (``capacity.search``). The writers
validate through it before they write; ``read`` is its reader."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import ConfigDict, Field, RootModel

from llama4spec.records.bench import MAX_RUNS, Length, Name, Result, Seconds, validated
from llama4spec.records.registry import Entry, register

FIX = "it is not a summary this tool wrote whole; run the step again (--resume) or `llama4spec report` the run"
WRITE_FIX = "the benchmark's figures are beyond what a record holds; nothing was written, run the step again"
Size = Annotated[int, Field(ge=1, le=10**4, description="a parallel size from 1 to 10,000")]


class Point(Result):
    """One run of a point: vLLM's figures, the point's settings, the run's number and acceptance length."""

    label: Name
    draft: Name
    lookahead: Annotated[int, Field(ge=0, le=64, description="a lookahead from 0 to 64")]
    run_number: Annotated[int, Field(ge=0, le=MAX_RUNS, description=f"a run number from 0 to {MAX_RUNS}")]
    category: Optional[Name] = None
    acceptance_length: Optional[Length] = None
    # vLLM writes "inf" for requests sent at once (its --request-rate default); a capacity probe its rate
    request_rate: Optional[Union[Literal["inf"], Annotated[float, Field(gt=0, le=1e4)]]] = Field(
        None, description="a request rate above 0, at most 1e4, or inf")
    users: Optional[Annotated[float, Field(ge=0, le=1e9, description="requests in flight from 0 to 1e9")]] = None
    tensor_parallel_size: Optional[Size] = None
    pipeline_parallel_size: Optional[Size] = None
    client_cpu_s: Optional[Seconds] = None


class Points(RootModel[Annotated[list[Point], Field(max_length=MAX_RUNS, description=f"at most {MAX_RUNS} runs")]]):
    """summary.json: a list of runs."""

    model_config = ConfigDict(strict=True, frozen=True)


def checked(data: Any, where: str, fix: str = FIX) -> Any:
    """``data`` (summary.json's list) when its model takes it, else UserError naming ``where``, the field
    and the rule; the writers pass what they write through it, and write ``data`` itself."""
    from llama4spec.files import finite

    validated(Points, finite(data), where, fix)  # as written: a NaN or infinity is null
    return data


def write(path: Path, data: list[dict[str, Any]]) -> None:
    """summary.json at ``path``, validated first (the bytes are ``files.write_json``'s)."""
    from llama4spec.files import plain, write_json

    write_json(Path(path), checked(data, plain(str(path)), WRITE_FIX))


def read(path: Path) -> Points:
    """A summary.json read back: the model, or UserError naming the file, the field and the rule."""
    from llama4spec.files import plain, read_json

    return validated(Points, read_json(Path(path)), plain(str(path)), FIX)


register(Entry("<bench step>/summary.json", Points, "llama4spec.points/1",
               "a bench step (and a capacity probe, under probes/rate=R/) writes it for vLLM's sweep plotters; "
               "the tool does not read it back", read))
