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
from typing import Any, Callable, Mapping, Protocol

from rich.console import Console


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


class StepRun(Protocol):
    """What a step may use of the run executing it."""

    console: Console
    environ: Mapping[str, str]
    plan: Any  # runbook.plan.Plan
    progress: Any  # runbook.progress.Progress
    benches: Any  # serving.bench_runner.BenchRunner
    output: Any  # runbook.output.RunOutput: what the run says about itself and its steps' results

    def say(self, text: str) -> None: ...
    def secrets(self, p: Any) -> dict[str, str]: ...
    def write_config(self, p: Any) -> None: ...
    def not_run(self) -> dict[str, str]: ...
    def server(self, step_id: str | None) -> Any: ...
    def keep_server(self, step_id: str, server: Any) -> None: ...
    def keep_result(self, step_id: str, record: Any) -> None: ...
    def keep_comparison(self, step_id: str, text: str) -> None: ...
    def partial(self, step_id: str, result: dict[str, Any]) -> None: ...


class ReadBack(Protocol):
    """Run directories read back as ``report`` reads them (``runbook.merge``): all of it is input."""

    sources: list[Any]  # runbook.merge.Source: the run directories given, in order

    def collect(self, ids: list[str], problems: dict[str, str] | None = None) -> dict[str, Any]: ...


class PageRead(ReadBack, Protocol):
    """A run directory read back for its report.html (``runbook.write_page``)."""

    secrets: tuple[str, ...]  # what the page redacts

    def figure(self, title: str, path: Path) -> Any: ...  # a plot the step wrote, or why it is not shown


class MergeRead(ReadBack, Protocol):
    """Run directories read back for ``report`` (``runbook.merge.rebuild``)."""

    out: Path  # where the report is written
    in_place: bool  # ``out`` is the one run directory given
    console: Console
    measured: dict[str, Any]  # point id -> its records merged (runbook.rundir.Measured)
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
    Keys: type  # a dataclass; its fields with readers are the runbook keys
    required: tuple[str, ...]  # keys a runbook must give
    traits: Traits

    def check(self, keys: Any, at: str, problems: list[str], state: dict[str, Any]) -> None: ...

    def conflicts(self, keys: Any, at: str, written: frozenset[str]) -> list[str]: ...
    def references(self, keys: Any) -> list[Reference]: ...
    def plan(self, ctx: Any, p: Any) -> None: ...
    def execute(self, run: StepRun, p: Any) -> dict[str, Any]: ...
    def describe(self, p: Any, say: Callable[[str], None]) -> None: ...
    def missing_input(self, plan: Any, p: Any) -> str | None: ...
    def ready_problem(self, p: Any) -> str | None: ...
    def pending(self, plan: Any, p: Any) -> bool: ...
    def plan_record(self, keys: Any) -> dict[str, Any]: ...
    def work(self, p: Any, before: Any) -> Any: ...  # its starts and runs (cost.model.Work; before: cost.model.Seen)
    expand: Callable[..., list[Any]] | None  # an expanding kind: the steps it stands for
    # a merging kind: (step id, the run directories given, runbook.merge.Source, in order) -> its part
    # of ``report`` from its plan.json entries there (None: nothing to report); UserError when they
    # cannot merge
    merge_part: Callable[[str, list[Any]], MergePart | None] | None
    # a kind with a section of its own in report.html: (the run directory read back, its plan.json
    # entry, the page: analysis.page.RunPage) adds that section to the page
    page_part: Callable[[PageRead, Mapping[str, Any], Any], None] | None


@dataclass
class Step:
    id: str
    kind_of: StepKind = field(repr=False)
    keys: Any  # the kind's Keys
    needs: list[str] = field(default_factory=list)
    description: str = ""
    budget: Any = None  # what it may spend (cost.budget.Budget), from its budget: key
    part_of: str | None = None  # generated: the expanding step it stands for (a sweep's server, say)

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


@dataclass
class Runbook:
    name: str
    path: Path
    description: str = ""
    env: dict[str, str] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    budget: Any = None  # what the whole runbook may spend (cost.budget.Budget)

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
