"""One module per step kind; each declares its keys (``Keys``) and its ``KIND``
(``steps.base.BaseKind``, a ``spec.StepKind``): traits, and how it plans, executes and describes
itself:

    plan(ctx, p)           fill the planned step (argv, env, artifacts); problems go to ctx.report
    execute(run, p)        run it through ``run`` (``spec.StepRun``); return its figures for the
                           run's status (``steps.failed.StepFailed`` on failure)
    describe(p, say)       the dry run's lines for it beyond the common ones
    plan_record(step)      what it adds to its plan.json entry

and a kind that merges results reports itself: ``merge_part`` (its part of ``llama4spec report``)
and ``page_part`` (its section of report.html); ``report`` and the page loop over the kinds that
declare them (``named``), never over kind names.

A new kind is one new module, named in ``KINDS``; a feature's kinds live in the feature's package
(``capacity/``, ``sweep/``), named in ``MODULES``.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from llama4spec.runbook.spec import Step, StepKind, Traits

KINDS = ("serve", "bench", "stop", "offline", "compare", "sweep", "fetch", "settle", "capacity", "search", "lossless",
         "breakeven")
MODULES = {"capacity": "llama4spec.capacity.kind", "search": "llama4spec.capacity.search",
           "sweep": "llama4spec.sweep.kind", "settle": "llama4spec.sweep.settle",
           "breakeven": "llama4spec.breakeven.kind"}


@functools.cache
def kind(name: str) -> StepKind:
    """The step kind ``name`` (ValueError for a kind there is not)."""
    if name not in KINDS:
        raise ValueError(f"unknown step kind {name!r}")
    return importlib.import_module(MODULES.get(name, f"llama4spec.runbook.steps.{name}")).KIND


def named(name: Any) -> StepKind | None:
    """The kind a record names (None for a kind there is not: plan.json is input)."""
    return kind(name) if isinstance(name, str) and name in KINDS else None


def traits_of(name: Any) -> Traits:
    """The traits of the kind a record names (none for a kind there is not: plan.json is input)."""
    of = named(name)
    return of.traits if of is not None else Traits()


def make(kind_name: str, step_id: str, needs: list[str] | None = None, description: str = "", **keys: Any) -> Step:
    """A step of kind ``kind_name`` with the given keys (the others at their defaults)."""
    of = kind(kind_name)
    return Step(id=step_id, kind_of=of, keys=of.Keys(**keys), needs=list(needs or []), description=description)
