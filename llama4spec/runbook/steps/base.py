"""A step kind from its module's functions (``BaseKind``): what a kind does not say does nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from llama4spec.cost.model import NONE
from llama4spec.runbook.spec import MergePart, PageRead, Reference, StepRun, Traits


@dataclass(frozen=True)
class BaseKind:
    """A ``spec.StepKind`` from its module's functions."""

    name: str
    Keys: type
    traits: Traits
    plan: Callable[[Any, Any], None]
    execute: Callable[[StepRun, Any], dict[str, Any]]
    describe: Callable[[Any, Callable[[str], None]], None] = lambda p, say: None
    required: tuple[str, ...] = ()
    check: Callable[[Any, str, list[str], dict[str, Any]], None] = lambda keys, at, problems, state: None
    # (keys, at, the keys written in the runbook): keys that contradict one another, checked on the keys
    # as written and again once the command line's --repeats / --warmup replace a step's own
    conflicts: Callable[[Any, str, frozenset[str]], list[str]] = lambda keys, at, written: []
    references: Callable[[Any], list[Reference]] = lambda keys: []
    missing_input: Callable[[Any, Any], str | None] = lambda plan, p: None  # (plan, p): why it must not run now
    ready_problem: Callable[[Any], str | None] = lambda p: None  # before anything starts: why it cannot run
    pending: Callable[[Any, Any], bool] = lambda plan, p: False  # (plan, p): the records leave it work (resume)
    # (runbook, step, cli, taken, make, problems): the steps an expanding kind stands for (runbook.matrix.expand)
    expand: Callable[..., list[Any]] | None = None
    plan_record: Callable[[Any], dict[str, Any]] = lambda keys: {}  # (keys): what it adds to its plan.json entry
    # (p, the steps planned before it: ``cost.model.Seen``): its starts and runs (``cost.model.Work``)
    work: Callable[[Any, Mapping[str, Any]], Any] = lambda p, before: NONE
    # a merging kind's part of ``report`` and its section of report.html (``spec.StepKind``)
    merge_part: Callable[[str, list[Any]], MergePart | None] | None = None
    page_part: Callable[[PageRead, Mapping[str, Any], Any], None] | None = None


def server_ref(keys: Any) -> list[Reference]:
    """The serve step a bench or stop step uses."""
    return [Reference("server", keys.server, "serve")]
