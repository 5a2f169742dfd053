"""A runbook once read, and what a step kind is.

Each step holds its kind (``StepKind``: ``steps/<kind>.py``'s ``KIND``) and that kind's keys
(``Keys``: a dataclass whose fields are the runbook keys). Code outside a kind's own module (or
its feature's package) asks the kind's traits and hooks, never its name; a step asks the run that
executes it only what ``StepRun`` offers. A kind that merges results reports itself: what it adds
to plan.json (``plan_record``), its part of ``llama4spec report`` (``merge_part``, a ``MergePart``)
and its section of report.html (``page_part``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Protocol, Sequence

from rich.console import Console

if TYPE_CHECKING:  # types only: none of these imports this module
    from llama4spec.analysis.page import Figure, RunPage
    from llama4spec.config.composed import Composed
    from llama4spec.cost.budget import Budget
    from llama4spec.cost.model import Seen, Work
    from llama4spec.multinode.plan import NodeCommand
    from llama4spec.records.plan import PlanRecord
    from llama4spec.results.bench import BenchRecord
    from llama4spec.runbook.output import RunOutput
    from llama4spec.runbook.progress import Progress
    from llama4spec.runbook.rundir import Measured
    from llama4spec.serving.bench_runner import BenchRunner
    from llama4spec.serving.server import ServerHandle


@dataclass(frozen=True)
class Traits:
    starts_engine: bool = False  # runs vLLM (the doctor gates it; its memory is planned)
    loads_models: bool = False  # host.json names its models with their cached commits
    expands: bool = False  # stands for steps generated at planning (a sweep's servers and points)
    merges: bool = False  # reads other steps' results: runs on whatever was measured, where results merge
    serves: bool = False  # starts a server that holds its port until its stop step (a group of its own)
    uses_server: bool = False  # its 'server' names a serve step, whose group it belongs to
    stops_server: bool = False  # ends its server's life
    benchmarks: bool = False  # runs vLLM's benchmark (the run's benchmark worker)
    measures: bool = False  # takes repeats / warmup (the command line's --repeats / --warmup replace them)
    decides: bool = False  # takes repeats: auto (measures until its comparisons are decided)
    describe_first: bool = False  # the dry run's lines for it come before its command
    shows_env: bool = False  # the dry run shows its environment


@dataclass(frozen=True)
class Reference:
    """A key of a step that names another step (or, where ``file_ok``, a saved file)."""

    role: str  # the key: server, baseline, candidate
    ref: str | None
    kind: str  # the kind of step it must name
    file_ok: bool = False  # may name a file instead


class KindKeys(Protocol):
    """A kind's ``Keys``: a dataclass whose fields with readers are the runbook keys."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


class Planned(Protocol):
    """A step as planned (``runbook.plan.PlannedStep``): what a kind's hooks read and fill in."""

    step: Step
    needs: list[str]  # explicit needs plus the implied ones
    run_dir: Path
    composed: Composed | None
    argv: list[str]  # the pasteable command
    exec_argv: list[str]  # what runs
    env: dict[str, str]
    secret_env: dict[str, str]  # NAME -> env var it is read from at run time
    artifacts: dict[str, Path]
    url: str | None
    inputs: dict[str, Path]
    nodes: list[NodeCommand]
    flat: bool

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def dir(self) -> Path: ...


class PlanView(Protocol):
    """A whole plan (``runbook.plan.Plan``) as a kind's hooks read it."""

    runbook: Runbook
    run_dir: Path
    overrides: list[str]  # from the command line, applied to every step last

    @property
    def steps(self) -> Sequence[Planned]: ...  # in execution order
    def get(self, step_id: str) -> Planned: ...


class PlanContext(Protocol):
    """What a kind's planner sees (``runbook.plan.Context``): the runbook, the command line's
    overrides, every step planned so far, and where problems go."""

    runbook: Runbook
    run_dir: Path
    cli: list[str]
    kinds: dict[str, str]
    problems: list[str]
    flat: bool

    @property
    def planned(self) -> Mapping[str, Planned]: ...
    def at(self, step_id: str) -> str: ...
    def report(self, step_id: str, found: list[str]) -> None: ...
    def compose(self, step_overrides: list[str], step_id: str, last: list[str] | None = None) -> Composed | None: ...
    def input_file(self, ref: str) -> Path | None: ...


class StepRun(Protocol):
    """What a step may use of the run executing it."""

    console: Console
    environ: Mapping[str, str]
    plan: PlanView
    progress: Progress
    benches: BenchRunner
    output: RunOutput  # what the run says about itself and its steps' results

    def say(self, text: str) -> None: ...
    def secrets(self, p: Planned) -> dict[str, str]: ...
    def write_config(self, p: Planned) -> None: ...
    def not_run(self) -> dict[str, str]: ...
    def server(self, step_id: str | None) -> ServerHandle | None: ...
    def keep_server(self, step_id: str, server: ServerHandle) -> None: ...
    def keep_result(self, step_id: str, record: BenchRecord) -> None: ...
    def keep_comparison(self, step_id: str, text: str) -> None: ...
    def partial(self, step_id: str, result: dict[str, Any]) -> None: ...


class RunSource(Protocol):
    """One run directory given to ``report`` (``runbook.merge.Source``): its status and plan.json."""

    dir: Path
    status: dict[str, Any]
    plan: list[dict[str, Any]]
    runs: list[Path]  # where step directories lie: the run, then its groups
    record: PlanRecord | None  # plan.json through its model

    def step(self, step_id: str) -> dict[str, Any] | None: ...
    def kinds(self) -> dict[str, str]: ...


class ReadBack(Protocol):
    """Run directories read back as ``report`` reads them (``runbook.merge``): all of it is input."""

    sources: Sequence[RunSource]  # the run directories given, in order

    def collect(self, ids: list[str], problems: dict[str, str] | None = None) -> dict[str, Measured]: ...


class PageRead(ReadBack, Protocol):
    """A run directory read back for its report.html (``runbook.write_page``)."""

    secrets: tuple[str, ...]  # what the page redacts

    def figure(self, title: str, path: Path) -> Figure: ...  # a plot the step wrote, or why it is not shown


class MergeRead(ReadBack, Protocol):
    """Run directories read back for ``report`` (``runbook.merge.rebuild``)."""

    out: Path  # where the report is written
    in_place: bool  # ``out`` is the one run directory given
    console: Console
    measured: dict[str, Measured]  # point id -> its records merged
    reasons: dict[str, str]  # point id -> why it has no counted record
    failures: dict[str, str]  # step id -> why it did not run (the runs' statuses)
    comparisons: dict[str, str]  # step id -> the report the status keeps


class MergePart(Protocol):
    """One merging step's part of ``report A B --out M`` (``runbook.merge.rebuild``), from its
    plan.json entries in the run directories given."""

    points: list[str]  # the bench steps whose records it reports (collected and merged by ``report``)
    writes: list[str]  # other step directories it writes into a new output directory
    notes: list[str]  # what merging the run directories given means for it, said once in the merged status

    def read(self, ctx: MergeRead) -> None: ...  # what it reads before anything is written (refused: UserError)
    def write(self, ctx: MergeRead) -> int: ...  # its report into ctx.out and ctx.comparisons; returns what is missing


class StepKind(Protocol):
    name: str
    Keys: type[KindKeys]  # a dataclass; its fields with readers are the runbook keys
    required: tuple[str, ...]  # keys a runbook must give
    traits: Traits

    def check(self, keys: KindKeys, at: str, problems: list[str], state: dict[str, Any]) -> None: ...

    def conflicts(self, keys: KindKeys, at: str, written: frozenset[str]) -> list[str]: ...
    def references(self, keys: KindKeys) -> list[Reference]: ...
    def plan(self, ctx: PlanContext, p: Planned) -> None: ...
    def execute(self, run: StepRun, p: Planned) -> dict[str, Any]: ...
    def describe(self, p: Planned, say: Callable[[str], None]) -> None: ...
    def missing_input(self, plan: PlanView, p: Planned) -> str | None: ...
    def ready_problem(self, p: Planned) -> str | None: ...
    def pending(self, plan: PlanView, p: Planned) -> bool: ...
    def plan_record(self, step: Step) -> dict[str, Any]: ...
    def work(self, p: Planned, before: Seen) -> Work: ...  # its starts and runs
    expand: Callable[..., list[Step]] | None  # an expanding kind: the steps it stands for
    # a merging kind: (step id, the run directories given, in order) -> its part of ``report`` from
    # its plan.json entries there (None: nothing to report); UserError when they cannot merge
    merge_part: Callable[[str, list[RunSource]], MergePart | None] | None
    # a kind with a section of its own in report.html: (the run directory read back, its plan.json
    # entry, the page) adds that section to the page
    page_part: Callable[[PageRead, Mapping[str, Any], RunPage], None] | None


@dataclass
class Step:
    id: str
    kind_of: StepKind = field(repr=False)
    keys: Any  # the kind's Keys
    needs: list[str] = field(default_factory=list)
    description: str = ""
    budget: Budget | None = None  # what it may spend, from its budget: key
    part_of: str | None = None  # generated: the expanding step it stands for (a sweep's server, say)
    expanded: Any = None  # generated: what its expansion produced besides steps (a sweep's ``SweepPlan``)

    @property
    def kind(self) -> str:
        return self.kind_of.name

    @property
    def traits(self) -> Traits:
        return self.kind_of.traits

    @property
    def server(self) -> str | None:
        """The serve step this step uses (bench, stop), else None."""
        return self.keys.server if self.traits.uses_server else None

    def references(self) -> list[Reference]:
        return self.kind_of.references(self.keys)

    @property
    def points(self) -> list[str]:
        """The bench steps an expanding step generated (its expansion's, else its keys'), else []."""
        return list(getattr(self.expanded, "points", None) or getattr(self.keys, "points", None) or [])


@dataclass
class Runbook:
    name: str
    path: Path
    description: str = ""
    env: dict[str, str] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    budget: Budget | None = None  # what the whole runbook may spend

    def step(self, step_id: str) -> Step:
        """The (first) step with this id; an index kept while ``steps`` is the same list of that length,
        so planning a runbook of n steps stays linear."""
        index = self.__dict__.get("_index")
        if index is None or index[0] is not self.steps or index[1] != len(self.steps):
            by_id: dict[str, Step] = {}
            for s in self.steps:
                by_id.setdefault(s.id, s)
            index = self.__dict__["_index"] = (self.steps, len(self.steps), by_id)
        found = index[2].get(step_id)
        if found is None or found.id != step_id:  # changed in place since: look again
            return next(s for s in self.steps if s.id == step_id)
        return found
