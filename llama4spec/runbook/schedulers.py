"""A rule over a whole plan: the servers whose results one step compares run one scheduler.

vLLM 0.32 turns async scheduling off under some methods (``config.methods``: CPU n-gram, suffix
decoding, ...) and keeps it on under the rest and without speculation, so a comparison of an n-gram
server with one without speculation also compares the scheduler. A sweep pins it itself
(``sweep.expand.pin_async_scheduling``); hand-written serve steps compared by a ``compare`` step, and
the servers of any other step that reads results (a sweep whose servers set it unevenly, a
break-even map), are checked here before anything starts: a doctor warning per comparing step that
names the servers on either side, the method and the fix. Pure: it reads the plan only.
"""

from __future__ import annotations

from llama4spec.config import methods
from llama4spec.preflight.doctor import WARNING, Finding
from llama4spec.runbook.plan import Plan, PlannedStep

RULE = "async-scheduling-compare"
FLAGS = ("--async-scheduling", "--no-async-scheduling")
SHOWN = 3  # servers named a side; the rest counted


def scheduler(p: PlannedStep) -> tuple[bool, bool]:
    """(async scheduling on, pinned by the server's flags) for a planned serve step: the last flag
    where its command gives one (``serve.async_scheduling``, or ``serve.extra_args``), else what
    vLLM 0.32 does under its method."""
    for arg in reversed(p.argv):
        if arg in FLAGS:
            return arg == FLAGS[0], True
    return methods.async_scheduling(p.composed.cfg.draft.method), False


def _servers(by_id: dict[str, PlannedStep], p: PlannedStep) -> list[str]:
    """The serve steps whose benchmarks ``p`` reads (named in its keys or generated as its points)."""
    benches = [r.ref for r in p.step.references() if r.ref in by_id]
    benches += [b for b in p.step.points if b in by_id]
    servers = [by_id[b].step.server for b in benches]
    return list(dict.fromkeys(s for s in servers if s in by_id and by_id[s].composed is not None
                              and by_id[s].step.traits.serves))


def _side(names: list[str], by_id: dict[str, PlannedStep], on: bool) -> str:
    """"server 'a' (n-gram), which runs without async scheduling", for up to SHOWN servers."""
    shown = [f"'{s}' ({methods.label(by_id[s].composed.cfg.draft.method)})" for s in names[:SHOWN]]
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    one = len(names) == 1
    return (f"{'server' if one else 'servers'} {', '.join(shown)}{more}, which {'runs' if one else 'run'} "
            f"{'with' if on else 'without'} async scheduling")


def findings(plan: Plan) -> list[Finding]:
    """A warning per step that compares servers vLLM schedules differently (none where every server
    it reads runs async scheduling alike, pinned or by its method)."""
    by_id = {p.id: p for p in plan.steps}
    out = []
    for p in plan.steps:
        if not p.step.traits.merges:
            continue
        servers = _servers(by_id, p)
        sides = {s: scheduler(by_id[s]) for s in servers}
        off = [s for s, (on, _) in sides.items() if not on]
        on = [s for s, (on_, _) in sides.items() if on_]
        if not (off and on):
            continue
        forced = sorted({methods.label(by_id[s].composed.cfg.draft.method) for s in off if not sides[s][1]})
        why_off = (f"vLLM 0.32 turns async scheduling off for {', '.join(forced)}" if forced
                   else "their flags turn async scheduling off")
        generated = bool(p.step.points)
        where = (f"in the overrides of step '{p.id}' (every server it starts)" if generated
                 else f"on the other side: in the overrides of {', '.join(repr(s) for s in on)}")
        out.append(Finding(
            RULE, WARNING,
            f"step '{p.id}' compares {_side(off, by_id, False)}, with {_side(on, by_id, True)}",
            f"{why_off} and keeps it on for the other side, so the comparison also measures the scheduler",
            f"set serve.async_scheduling=false {where}",
        ))
    return out
