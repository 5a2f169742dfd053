"""job.json: where a server group's job ran (``<RUN_DIR>/groups/<group>/job.json``). The group's own
command writes it through ``JobRecord`` when it starts and when it ends (``launch.group.record``);
the launcher (``launch.jobs.group_where``: node, devices, times) and the co-location of a report
(``runbook.colocation``) read it back through ``read``. The model lies here, below both (the
runbook may not import the launchers)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import Field

from llama4spec.records.base import MAX_TEXT, Record, validated
from llama4spec.records.plan import PathText, StepId
from llama4spec.records.registry import Entry, register

MAX_FIELD = 4_096  # a node list, a log path, a reason
Text = Annotated[str, Field(max_length=MAX_FIELD, description=f"text of at most {MAX_FIELD} characters")]
Stamp = Annotated[str, Field(max_length=100, description="a time stamp of at most 100 characters")]


class JobRecord(Record):
    """job.json."""

    RULE: ClassVar[str] = "a job record (a JSON object)"

    group: StepId
    job_id: Union[Text, None] = None
    slurm_job_id: Union[Text, None] = None
    node: Union[Text, None] = None
    nodes: Union[Text, None] = None
    devices: Annotated[dict[Annotated[str, Field(max_length=MAX_TEXT)], Text], Field(
        max_length=1_000, description=f"device variables and their values (at most {MAX_FIELD} characters)")] = {}
    started: Union[Stamp, None] = None
    finished: Union[Stamp, None] = None
    status: Union[Literal["running", "done", "failed", "interrupted"], None] = Field(
        None, description="running, done, failed or interrupted")
    exit: Union[int, None] = Field(None, ge=-1_000, le=1_000, description="an exit code from -1000 to 1000")
    log: Union[PathText, None] = None


FIX = "it is not a record this tool wrote"


def checked(data: Any, where: str) -> JobRecord:
    """``data`` (job.json as written or read) through the model; UserError (one line) otherwise."""
    return validated(JobRecord, data, where, FIX)


def read(path: Path) -> JobRecord:
    """job.json read back: the validated model, or UserError naming the file, the field and the rule."""
    from llama4spec.files import plain, read_json

    return checked(read_json(Path(path)), plain(str(path)))


def job_or_problem(path: Path) -> tuple[JobRecord | None, str | None]:
    """(job.json's model, None); (None, None) without one; (None, the one-line problem)."""
    from llama4spec.records.io import model_or_problem

    return model_or_problem(read, path)


register(Entry("groups/<group>/job.json", JobRecord, "llama4spec.job/1",
                       "where a server group's job ran: the group's command writes it; the launcher and report's "
                       "co-location read it", read))
