"""A sweep step expanded into the steps it stands for, design by design: each design a class
registered by name (``registry``; its base: ``design.Design``), run in the order of its phase where
it applies, appending to one ``expansion.Expansion``: ``design_auto`` (``design: auto``: which
design), ``design_interleaved`` (``design: interleaved``: no speculation's server beside each
candidate), ``design_starts`` (``starts: N``: each server started N times, in a random order),
``design_sequential`` (per server a serve step, a bench step per client-side setting, with
``repeats: auto`` a settle step, then a stop step), ``design_revisit`` (``revisit: true``: a second
start of every server) and ``design_schedule`` (``verify_schedule: true``: a server running the
lookahead schedule derived from the points). The matrix itself (checking it, grouping its
combinations by server): ``runbook.matrix``.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from llama4spec.runbook.matrix import Make, ServerGroup, server_groups
from llama4spec.runbook.spec import Runbook, Step
from llama4spec.runbook import bands
from llama4spec.sweep.design import Scope
from llama4spec.sweep.expansion import Expansion
from llama4spec.sweep.registry import in_phase_order


def pin_async_scheduling(groups: list[ServerGroup]) -> str | None:
    """Where one of a sweep's servers runs a method vLLM 0.32 schedules without async scheduling
    (``config.methods``), every server gets ``serve.async_scheduling=false``, so that a speedup
    compares methods and not schedulers: the sentence that says so, None where nothing was pinned
    (every method keeps it on, or a server sets it itself)."""
    from llama4spec.config import methods

    cfgs = [g.cfg for g in groups if g.cfg is not None]
    names = [c.draft.method for c in cfgs]
    if len(cfgs) < 2 or methods.pinned_async_scheduling(names) is not False \
            or any(c.serve.async_scheduling is not None for c in cfgs):
        return None
    for g in groups:
        g.overrides.append("serve.async_scheduling=false")
    off = sorted({methods.label(n) for n in names if not methods.async_scheduling(n)})
    return (f"async scheduling pinned off on every server: vLLM 0.32 turns it off for {', '.join(off)}, so "
            f"each speedup compares methods under one scheduler (serve.async_scheduling=true|false sets it yourself)")


def expand_step(runbook: Runbook, step: Step, cli: list[str], taken: set[str], make: Make,
                problems: list[str], environ: Mapping[str, str] | None = None) -> list[Step]:
    """The serve/bench/stop steps a sweep step stands for, followed by the sweep step itself
    (which then needs every bench and lists them as its points, in its ``Step.expanded``:
    ``planned.SweepPlan``, with the design it took). ``taken`` holds the step ids in use
    (the file's and those generated so far); the generated ids are added to it. Linear in the points.
    ``environ``: where an interleaved sweep reads the devices it may split (this process's).

    ``design: auto`` (the default) takes back-to-back blocks where two servers fit on GPUs, else the
    sequential design (``design_auto``). The designs in the order their steps run (``registry``):
    interleaved pairs or blocks (where asked for and two copies fit), the sequential pass over the
    servers left (or their repeated starts), a revisit of that pass, the schedule phase."""
    at = f"{runbook.path}: step '{step.id}'"
    matrix = step.keys.matrix or {}
    groups = server_groups(runbook, step, matrix, cli, problems)
    if step.keys.bands:  # refused bands are not expanded into points (said once)
        matrix = bands.checked(step.keys.bands, [g.cfg for g in groups if g.cfg is not None], matrix, at, problems)
    x = Expansion.of(step, make, taken, matrix)
    pinned = pin_async_scheduling(groups)
    if pinned:
        x.plan.async_pinned = pinned
    scope = Scope(runbook, matrix, cli, environ, problems, at)
    for design_type in in_phase_order():  # each where it applies, on the servers the designs before it left
        design = design_type.of(x)
        if design is not None:
            groups = design.expand(x, groups, scope)
    if x.clash is not None:
        problems.append(f"{at}: the generated step id '{x.clash}' is already used by another step (or made "
                        f"twice, by values that differ only in punctuation); rename the sweep step or that step")
    x.plan.points = x.points
    return [*x.out, dataclasses.replace(x.step, needs=list(dict.fromkeys([*x.step.needs, *x.points])),
                                        expanded=x.plan)]
