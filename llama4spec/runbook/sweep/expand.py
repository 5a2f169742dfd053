"""A sweep step expanded into the steps it stands for, design by design, each in its own module
appending to one ``expansion.Expansion``: ``design_interleaved`` (``design: interleaved``: no
speculation's server beside each candidate), ``design_sequential`` (per server a serve step, a bench
step per client-side setting, with ``repeats: auto`` a settle step, then a stop step),
``design_starts`` (``starts: N``: each server started N times, in a random order),
``design_revisit`` (``revisit: true``: a second start of every server) and ``design_schedule``
(``verify_schedule: true``: a server running the lookahead schedule derived from the points). The
matrix itself (checking it, grouping its combinations by server): ``runbook.matrix``.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from llama4spec.runbook.fields import AUTO
from llama4spec.runbook.matrix import Make, ServerGroup, server_groups
from llama4spec.runbook.spec import Runbook, Step
from llama4spec.runbook.sweep.design_interleaved import chosen_design, interleave
from llama4spec.runbook.sweep.design_revisit import revisit
from llama4spec.runbook.sweep.design_schedule import schedule
from llama4spec.runbook.sweep.design_sequential import sequential
from llama4spec.runbook.sweep.design_starts import repeated_starts
from llama4spec.runbook.sweep.expansion import Expansion

AUTO_DESIGN, SEQUENTIAL, INTERLEAVED = DESIGNS = ("auto", "sequential", "interleaved")  # a sweep's design (the first: default)
AUTO_BLOCKS = 3  # design: auto with a fixed repeats: the back-to-back blocks a candidate gets where they fit


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
    (which then needs every bench and lists them as its points). ``taken`` holds the step ids in use
    (the file's and those generated so far); the generated ids are added to it. Linear in the points.
    ``environ``: where an interleaved sweep reads the devices it may split (this process's).

    ``design: auto`` (the default) takes back-to-back blocks where two servers fit on GPUs, else the
    sequential design (``design_interleaved.chosen_design`` says why). The designs in the order
    their steps run: interleaved pairs or blocks (where asked for and two copies fit),
    the sequential pass over the servers left (or their repeated starts), a revisit of that pass,
    the schedule phase."""
    at = f"{runbook.path}: step '{step.id}'"
    matrix = step.keys.matrix or {}
    x = Expansion.of(step, make, taken, matrix)
    groups = server_groups(runbook, step, matrix, cli, problems)
    pinned = pin_async_scheduling(groups)
    if pinned:
        x.refine(async_pinned=pinned)
    if x.keys.design == AUTO_DESIGN:  # back-to-back blocks where two servers fit on GPUs, else sequential
        why = chosen_design(x, groups, environ)
        if why is None:
            x.refine(chosen=INTERLEAVED, starts=x.keys.starts if x.keys.starts > 1 or x.keys.repeats == AUTO
                     else AUTO_BLOCKS)
        else:
            x.refine(chosen=SEQUENTIAL, auto_why=why)
    if (x.keys.chosen or x.keys.design) == INTERLEAVED:
        groups = interleave(x, groups, environ, problems, at)
    if x.keys.starts > 1 and groups:  # each setting's server started again in rounds of a random order
        repeated_starts(x, groups)
        groups = []
    first_pass = sequential(x, groups)
    if x.keys.repeats == AUTO and x.keys.revisit:  # a second start of each server the first pass left undecided
        revisit(x, first_pass)
    if x.keys.verify_schedule:  # a second phase: the schedule derived from the points above, measured the same way
        schedule(x, runbook, matrix, cli, problems, at)
    if x.clash is not None:
        problems.append(f"{at}: the generated step id '{x.clash}' is already used by another step (or made "
                        f"twice, by values that differ only in punctuation); rename the sweep step or that step")
    return [*x.out, dataclasses.replace(x.step, needs=list(dict.fromkeys([*x.step.needs, *x.points])),
                                        keys=dataclasses.replace(x.keys, points=x.points))]
