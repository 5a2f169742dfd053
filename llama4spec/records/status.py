"""status.json (and summary.json, its name before the per-step layout): a run's status, its steps
with their figures, its comparisons and, for a launched run, its jobs. The executor, ``report`` (a
merge) and the launchers write it through ``StatusRecord`` (``runbook.recorder.Recorder.status``);
``--resume``, ``report``, ``cancel`` and the launchers read it back through ``read`` /
``runbook.rundir.status_or_problem``. Every key is optional, as a status of the earlier layout (or
the one-key status a fixture writes) has few; what is there is typed and bounded. A step's
``result`` stays a mapping: its kind reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import Field

from llama4spec.records.base import MAX_TEXT, Record, validated
from llama4spec.records.plan import MAX_ARG, MAX_ARGS, MAX_PATH, MAX_STEPS, Kind, Name, Override, PathText, StepId
from llama4spec.records.registry import Entry, register

MAX_LINE = 4_096  # a log line, a note
MAX_ERROR = 65_536  # a step's error (a server's last words included)
MAX_TABLE = 1 << 20  # a comparison's table or sweep report (markdown)
MAX_SECONDS = 1e8  # a step's wall time: three years

RunState = Literal["pending", "running", "stopping servers", "interrupted", "failed", "done", "merged", "submitted",
                   "cancelled"]
StepState = Literal["pending", "running", "done", "failed", "skipped", "interrupted", "missing", "merged"]
JobState = Literal["pending", "running", "done", "failed", "cancelled", "skipped"]
Stamp = Annotated[str, Field(max_length=100, description="a time stamp of at most 100 characters")]
Text = Annotated[str, Field(max_length=MAX_TEXT, description=f"text of at most {MAX_TEXT} characters")]
Line = Annotated[str, Field(max_length=MAX_LINE, description=f"a line of at most {MAX_LINE} characters")]
Lines = Annotated[list[Line], Field(max_length=1_000, description=f"at most 1,000 lines of at most {MAX_LINE} "
                                                                  f"characters")]


class StepEntry(Record):
    """One step of the status: its state and, when it ran, its figures, time and failure."""

    id: StepId
    kind: Union[Kind, None] = Field(None, description="a step kind this version has")
    status: StepState = Field("pending", description="pending, running, done, failed, skipped, interrupted, "
                                                     "missing or merged")
    result: Union[dict[str, Any], None] = None  # its kind's figures (a bench's, a comparison's table)
    seconds: Union[float, None] = Field(None, ge=0, le=MAX_SECONDS, description="seconds from 0 to 1e8")
    resumed: bool = False
    error: Union[str, None] = Field(None, max_length=MAX_ERROR, description=f"text of at most {MAX_ERROR} characters")
    reason: Union[str, None] = Field(None, max_length=MAX_ERROR, description=f"text of at most {MAX_ERROR} characters")
    log_tail: Union[Lines, None] = None
    repeats: Union[int, None] = Field(None, ge=0, le=1_000_000, description="a count from 0 to 1,000,000")


class JobEntry(Record):
    """One job of a launched run (``launch.jobs.Job.to_record``)."""

    group: StepId
    job_id: Text = "-"
    shape: Text = "-"
    state: JobState = Field("pending", description="pending, running, done, failed, cancelled or skipped")
    node: Union[PathText, None] = None
    devices: Annotated[dict[Text, Text], Field(max_length=1_000, description="device variables and their values "
                                                                            f"(at most {MAX_TEXT} characters)")] = {}
    start: Union[Stamp, None] = None
    end: Union[Stamp, None] = None
    log: Union[PathText, None] = None
    err_log: Union[PathText, None] = None
    reason: Union[str, None] = Field(None, max_length=MAX_ERROR, description=f"text of at most {MAX_ERROR} characters")


Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS, description="seconds from 0 to 1e8")]


class CostAgainst(Record):
    """The run's wall time against what its dry run predicted (``cost.lines.against``)."""

    predicted_wall_s: Annotated[list[Seconds], Field(min_length=2, max_length=2, description="[least, most]")]
    measured_wall_s: Seconds
    source: Line
    sentence: Line


class StatusRecord(Record):
    """status.json."""

    RULE: ClassVar[str] = "a run status (a JSON object)"

    runbook: Union[Name, None] = None
    runbook_path: Union[PathText, None] = None
    description: Union[str, None] = Field(None, max_length=MAX_ARG, description=f"text of at most {MAX_ARG} characters")
    run_dir: Union[PathText, None] = None
    overrides: Annotated[list[Override], Field(max_length=MAX_ARGS, description=(
        f"a list of at most {MAX_ARGS} overrides of at most {MAX_ARG} characters"))] = []
    status: Union[RunState, None] = Field(None, description="pending, running, stopping servers, interrupted, failed, "
                                                            "done, merged, submitted or cancelled")
    started: Union[Stamp, None] = None
    finished: Union[Stamp, None] = None
    rebuilt: Union[Stamp, None] = None
    resumed: bool = False
    launcher: Union[Text, None] = None
    steps: Annotated[list[StepEntry], Field(max_length=MAX_STEPS, description="a list of steps")] = []
    comparisons: Annotated[dict[StepId, Annotated[str, Field(max_length=MAX_TABLE)]], Field(
        max_length=MAX_STEPS, description=f"step ids and their tables (at most {MAX_TABLE} characters)")] = {}
    jobs: Annotated[list[JobEntry], Field(max_length=MAX_STEPS, description="a list of jobs")] = []
    groups: Annotated[list[StepId], Field(max_length=MAX_STEPS, description="a list of group names")] = []
    merged_from: Annotated[list[PathText], Field(max_length=1_000, description=(
        f"a list of run directories (paths of at most {MAX_PATH} characters)"))] = []
    notes: Lines = []
    node_types: Annotated[dict[Annotated[str, Field(max_length=MAX_ARG)], list[StepId]], Field(
        max_length=1_000, description="node types and the groups that ran on each")] = {}
    submit_seconds: Union[float, None] = Field(None, ge=0, le=MAX_SECONDS, description="seconds from 0 to 1e8")
    cost: Union[CostAgainst, None] = None  # a whole run (not resumed): its wall time against the predicted


FIX = "it is not a record this tool wrote"


def checked(data: Any, where: str) -> StatusRecord:
    """``data`` (a status as written or read) through the model; UserError (one line) otherwise."""
    return validated(StatusRecord, data, where, FIX)


def read(path: Path) -> StatusRecord:
    """status.json read back: the validated model, or UserError naming the file, the field and the rule."""
    from llama4spec.files import plain, read_json

    return checked(read_json(Path(path)), plain(str(path)))


register(Entry("status.json", StatusRecord, "llama4spec.status/1",
                       "the run's status, steps, comparisons and jobs: `run`, `report` and the launchers write it; "
                       "`--resume`, `report` and `cancel` read it", read))
