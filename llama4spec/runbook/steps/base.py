"""A step kind from its module's functions (``BaseKind``): what a kind does not say does nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from llama4spec.cost.model import NONE, Seen, Work
from llama4spec.runbook.spec import (KindKeys, MergePart, PageRead, PlanContext, Planned, PlanView, Reference,
                                     RunSource, Step, StepRun, Traits)

if TYPE_CHECKING:
    from llama4spec.analysis.page import RunPage


@dataclass(frozen=True)
class BaseKind:
    """A ``spec.StepKind`` from its module's functions."""

    name: str
    Keys: type[KindKeys]
    traits: Traits
    plan: Callable[[PlanContext, Planned], None]
    execute: Callable[[StepRun, Planned], dict[str, Any]]
    describe: Callable[[Planned, Callable[[str], None]], None] = lambda p, say: None
    required: tuple[str, ...] = ()
    check: Callable[[KindKeys, str, list[str], dict[str, Any]], None] = lambda keys, at, problems, state: None
    # (keys, at, the keys written in the runbook): keys that contradict one another, checked on the keys
    # as written and again once the command line's --repeats / --warmup replace a step's own
    conflicts: Callable[[KindKeys, str, frozenset[str]], list[str]] = lambda keys, at, written: []
    references: Callable[[KindKeys], list[Reference]] = lambda keys: []
    missing_input: Callable[[PlanView, Planned], str | None] = lambda plan, p: None  # why it must not run now
    ready_problem: Callable[[Planned], str | None] = lambda p: None  # before anything starts: why it cannot run
    pending: Callable[[PlanView, Planned], bool] = lambda plan, p: False  # the records leave it work (resume)
    # (runbook, step, cli, taken, make, problems): the steps an expanding kind stands for (runbook.matrix.expand)
    expand: Callable[..., list[Step]] | None = None
    plan_record: Callable[[Step], dict[str, Any]] = lambda step: {}  # (step): what it adds to its plan.json entry
    # (p, the steps planned before it): its starts and runs
    work: Callable[[Planned, Seen], Work] = lambda p, before: NONE
    # a merging kind's part of ``report`` and its section of report.html (``spec.StepKind``)
    merge_part: Callable[[str, list[RunSource]], MergePart | None] | None = None
    page_part: Callable[[PageRead, Mapping[str, Any], RunPage], None] | None = None


def server_ref(keys: Any) -> list[Reference]:
    """The serve step a bench or stop step uses."""
    return [Reference("server", keys.server, "serve")]
