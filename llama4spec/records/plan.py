"""plan.json: a run's planned steps, one entry each (``runbook.plan.Plan.to_record`` writes it, the
recorder validates it through ``PlanRecord`` first; ``merge``, ``resume``, the launchers, the sweep
and capacity reports read it back through ``read``). What every step has is typed and bounded: its
id (a step id as planning accepts it), its kind (one of the kinds there are), its commands (bounded
lists of bounded text), its references (``needs``, ``inputs``, ``artifacts``), its environment
(variable names), its URL and its config choices and overrides. What a kind adds (a sweep's
``design``, a capacity step's ``capacity``, ``cost``) stays a mapping: that kind reads it (the
sweep's design through ``runbook.noise_prior``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import ConfigDict, Field, RootModel

from llama4spec.records.base import MAX_TEXT, Record, validated
from llama4spec.records.registry import Entry, register

MAX_STEP_ID = 120  # as runbook.rundir.MAX_STEP_ID: a generated step id is at most this long
MAX_STEPS = 100_000
MAX_ARG = 65_536  # one command-line argument (a JSON speculative config, a long path)
MAX_ARGS = 10_000
MAX_PATH = 4_096
MAX_ENTRIES = 10_000  # keys of a mapping (env, artifacts, inputs, choices)
MAX_PRICE = 1e6  # as frontier.price.MAX_PRICE

StepId = Annotated[str, Field(max_length=MAX_STEP_ID, pattern=r"^[A-Za-z][\w-]*$",
                              description="a step id (a letter, then letters, digits, '_' or '-', "
                                          f"at most {MAX_STEP_ID} characters)")]
Kind = Literal["serve", "bench", "stop", "offline", "compare", "sweep", "fetch", "settle", "capacity", "search",
               "lossless", "breakeven"]
Arg = Annotated[str, Field(max_length=MAX_ARG, description=f"an argument of at most {MAX_ARG} characters")]
Argv = Annotated[list[Arg], Field(max_length=MAX_ARGS, description=f"a command of at most {MAX_ARGS} arguments of at most {MAX_ARG} characters each")]
EnvName = Annotated[str, Field(max_length=MAX_TEXT, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                               description="a variable name (letters, digits and '_')")]
EnvValue = Annotated[str, Field(max_length=MAX_ARG, description=f"text of at most {MAX_ARG} characters")]
Env = Annotated[dict[EnvName, EnvValue], Field(max_length=MAX_ENTRIES, description=(
    f"variable names (letters, digits and '_') and values of at most {MAX_ARG} characters"))]
Name = Annotated[str, Field(max_length=MAX_TEXT, description=f"a name of at most {MAX_TEXT} characters")]
PathText = Annotated[str, Field(max_length=MAX_PATH, description=f"a path of at most {MAX_PATH} characters")]
Paths = Annotated[dict[Name, PathText], Field(max_length=MAX_ENTRIES, description=f"names and paths of at most {MAX_PATH} characters")]
Url = Annotated[str, Field(max_length=MAX_PATH, description=f"a URL of at most {MAX_PATH} characters")]
Override = Annotated[str, Field(max_length=MAX_ARG, description=f"an override of at most {MAX_ARG} characters")]


class NodeCommand(Record):
    """One node's command of a multi-node server step (``multinode.plan.node_records``)."""

    rank: int = Field(ge=0, le=100_000, description="a node rank from 0 to 100,000")
    address: Name
    argv: Argv = []
    exec_argv: Argv = []
    env: Env = {}


class PlanStep(Record):
    """One step of plan.json."""

    id: StepId
    kind: Kind = Field(description="a step kind this version has (serve, bench, stop, offline, compare, sweep, "
                                   "fetch, settle, capacity, search, lossless, breakeven)")
    needs: Annotated[list[StepId], Field(max_length=MAX_STEPS, description="a list of step ids (each a letter, then letters, digits, '_' or '-')")] = []
    argv: Argv = []
    exec_argv: Argv = []
    env: Env = {}
    secret_env: Env = {}
    artifacts: Paths = {}
    url: Union[Url, None] = None
    inputs: Paths = {}
    choices: Union[Annotated[dict[Name, Union[Name, None]], Field(max_length=MAX_ENTRIES)], None] = Field(
        None, description=f"config groups and the option chosen in each (at most {MAX_TEXT} characters)")
    overrides: Union[Annotated[list[Override], Field(max_length=MAX_ARGS)], None] = Field(
        None, description=f"a list of at most {MAX_ARGS} overrides of at most {MAX_ARG} characters")
    nodes: Union[Annotated[list[NodeCommand], Field(max_length=MAX_ARGS)], None] = None
    price: Union[float, None] = Field(None, ge=0, le=MAX_PRICE, description="a device-hour price from 0 to 1e6")
    # a kind's own part (its kind reads it): mappings, checked where read
    design: Union[dict[str, Any], None] = None
    capacity: Union[dict[str, Any], None] = None
    cost: Union[dict[str, Any], None] = None
    budget: Union[dict[str, Any], None] = None


class PlanRecord(RootModel[Annotated[list[PlanStep], Field(min_length=1, max_length=MAX_STEPS, description=(
        f"a plan (a list of 1 to {MAX_STEPS:,} steps)"))]]):
    """plan.json: a list of at least one step (a runbook has steps, so every plan written has too)."""

    model_config = ConfigDict(strict=True, frozen=True, allow_inf_nan=False)

    def step(self, step_id: str) -> PlanStep | None:
        return next((s for s in self.root if s.id == step_id), None)

    def kinds(self) -> dict[str, str]:
        return {s.id: s.kind for s in self.root}


FIX = "it is not a record this tool wrote"


def checked(data: Any, where: str) -> PlanRecord:
    """``data`` (plan.json as written or read) through the model; UserError (one line) otherwise."""
    return validated(PlanRecord, data, where, FIX)


def read(path: Path) -> PlanRecord:
    """plan.json read back: the validated model, or UserError naming the file, the field and the rule."""
    from llama4spec.files import plain, read_json

    return checked(read_json(Path(path)), plain(str(path)))


def plan_or_problem(path: Path) -> tuple[PlanRecord | None, str | None]:
    """(plan.json's model, None); (None, None) without one; (None, the one-line problem)."""
    from llama4spec.records.io import model_or_problem

    return model_or_problem(read, path)


register(Entry("plan.json", PlanRecord, "llama4spec.plan/1",
                       "the run's planned steps: `run` writes it, `report`, `--resume` and the launchers read it",
                       read))
