"""A sweep step's matrix: checking it and expanding it into serve, bench and stop steps.

Axes under ``bench`` (the benchmark client's settings) are client-side; every other axis may
change the server. Server-side combinations are grouped by the server they imply (its argv and
environment), so settings that leave the server unchanged, such as the lookahead without a
draft, share one server. Each server is started once, measured at every client-side setting,
then stopped before the next one starts (they share a port and the machine).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import re

from llama4spec.config.compose import compose_config
from llama4spec.engine.args import engine_env, serve_argv
from llama4spec.errors import UserError
from llama4spec.runbook.schema import Runbook, Step, matrix_points, points_problem

CLIENT_GROUP = "bench"
SHORT = {"lookahead": "k", "bench.max_concurrency": "c", "bench.num_prompts": "n"}
MAX_GENERATED_ID = 120  # a generated step id names a directory: well below a file name's 255 bytes


def is_client_axis(key: str) -> bool:
    return key == CLIENT_GROUP or key.startswith(CLIENT_GROUP + ".")


def file_label(key: str, value: str) -> str:
    """A short, file-safe name for one axis value: k3, c16, tiny_eagle, parallel-tp4."""
    if key in SHORT:
        text = f"{SHORT[key]}{value}"
    elif key in ("draft", "target"):
        text = value
    else:
        text = f"{key.rsplit('.', 1)[-1]}-{value}"
    return re.sub(r"[^\w-]", "_", text, flags=re.ASCII)


def bounded_id(text: str) -> str:
    """A generated step id of at most MAX_GENERATED_ID characters (ASCII): a long one keeps its start
    and ends with a hash of the whole, so distinct ids stay distinct."""
    if len(text) <= MAX_GENERATED_ID:
        return text
    return f"{text[:MAX_GENERATED_ID - 13]}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


@dataclasses.dataclass
class ServerGroup:
    """One server of a sweep and the server-side combinations it stands for."""

    overrides: list[str]  # the server-side overrides of its first combination
    combos: list[dict[str, str]]

    def constant(self, axes: list[str]) -> list[tuple[str, str]]:
        return [(a, self.combos[0][a]) for a in axes if all(c[a] == self.combos[0][a] for c in self.combos)]


def server_groups(runbook: Runbook, step: Step, matrix: dict[str, list[str]], cli: list[str],
                  problems: list[str]) -> list[ServerGroup]:
    """Server-side combinations grouped by the server they imply, in matrix order: one composition per
    combination (linear in their number). When a combination fails to compose, the overrides it shares
    with every other one are composed alone: if they fail, that is reported once and nothing more is composed."""
    axes = [a for a in matrix if not is_client_axis(a)]
    groups: dict[tuple, ServerGroup] = {}
    found: list[str] = []
    shared = [*runbook.overrides, *step.overrides]
    checked_shared = False
    for combo in itertools.product(*(matrix[a] for a in axes)):
        overrides = [f"{a}={v}" for a, v in zip(axes, combo)]
        try:
            cfg = compose_config([*shared, *overrides, *cli]).cfg
        except UserError as err:
            found += err.problems
            if not checked_shared:
                checked_shared = True
                try:
                    compose_config([*shared, *cli])
                except UserError as common:
                    found = list(common.problems)  # every combination fails the same way
                    break
            continue
        key = (tuple(serve_argv(cfg)), tuple(sorted(engine_env(cfg).items())))
        group = groups.setdefault(key, ServerGroup(overrides=overrides, combos=[]))
        group.combos.append(dict(zip(axes, combo)))
    problems.extend(f"{runbook.path}: step '{step.id}': matrix: {p}" for p in dict.fromkeys(found))
    return list(groups.values())


def expand_step(runbook: Runbook, step: Step, cli: list[str], taken: set[str],
                problems: list[str]) -> list[Step]:
    """The serve/bench/stop steps a sweep step stands for, followed by the sweep step itself
    (which then needs every bench and lists them as its points). ``taken`` holds the step ids in use
    (the file's and those generated so far); the generated ids are added to it. Linear in the points."""
    at = f"{runbook.path}: step '{step.id}'"
    matrix = step.matrix or {}
    server_axes = [a for a in matrix if not is_client_axis(a)]
    client_axes = [a for a in matrix if is_client_axis(a)]
    client_combos = list(itertools.product(*(matrix[a] for a in client_axes)))
    client_labels = ["-".join(file_label(a, v) for a, v in zip(client_axes, combo)) for combo in client_combos]
    out: list[Step] = []
    points: list[str] = []
    previous_stop: str | None = None
    names: set[str] = set()
    clash: str | None = None

    def new_id(text: str) -> str:
        nonlocal clash
        sid = bounded_id(text)
        if sid in taken and clash is None:
            clash = sid
        taken.add(sid)
        return sid

    for n, group in enumerate(server_groups(runbook, step, matrix, cli, problems), 1):
        constant = group.constant(server_axes)
        name = "-".join(file_label(a, v) for a, v in constant) or "server"
        if name in names:
            base, k = name, n
            while name in names:
                name, k = f"{base}-{k}", k + 1
        names.add(name)
        sid = new_id(f"{step.id}-{name}")
        what = " ".join(f"{a}={v}" for a, v in constant) or "the sweep's server"
        serve = Step(id=sid, kind="serve", needs=[previous_stop] if previous_stop else list(step.needs),
                     description=f"sweep '{step.id}': server for {what}",
                     overrides=[*step.overrides, *group.overrides])
        out.append(serve)
        for combo, label in zip(client_combos, client_labels):
            bid = new_id(f"{sid}-{label}" if client_axes else f"{sid}-bench")
            out.append(Step(id=bid, kind="bench", server=sid, label=bid, extra_args=list(step.extra_args),
                            overrides=[f"{a}={v}" for a, v in zip(client_axes, combo)],
                            repeats=step.repeats, warmup=step.warmup))
            points.append(bid)
        previous_stop = new_id(f"{sid}-stop")
        out.append(Step(id=previous_stop, kind="stop", server=sid))
    if step.verify_schedule:  # a second phase: the schedule derived from the points above, measured the same way
        found = _schedule_server(runbook, step, matrix, cli)
        if isinstance(found, str):
            problems.append(f"{at}: verify_schedule: {found}")
        else:
            sid = new_id(f"{step.id}-schedule")
            out.append(Step(id=sid, kind="serve", needs=[previous_stop] if previous_stop else list(step.needs),
                            description=f"sweep '{step.id}': the lookahead schedule derived from its points",
                            overrides=[*step.overrides, *found], derive_from=list(points)))
            for combo, label in zip(client_combos, client_labels):
                bid = new_id(f"{sid}-{label}" if client_axes else f"{sid}-bench")
                out.append(Step(id=bid, kind="bench", server=sid, label=bid, extra_args=list(step.extra_args),
                                overrides=[f"{a}={v}" for a, v in zip(client_axes, combo)],
                                repeats=step.repeats, warmup=step.warmup))
                points.append(bid)
            out.append(Step(id=new_id(f"{sid}-stop"), kind="stop", server=sid))
    if clash is not None:
        problems.append(f"{at}: the generated step id '{clash}' is already used by another step (or made "
                        f"twice, by values that differ only in punctuation); rename the sweep step or that step")
    return [*out, dataclasses.replace(step, needs=list(dict.fromkeys([*step.needs, *points])), points=points)]


def _schedule_server(runbook: Runbook, step: Step, matrix: dict[str, list[str]], cli: list[str]) -> list[str] | str:
    """The overrides of the schedule-verifying server (its draft, and lookahead = the largest swept),
    or why there can be none."""
    try:
        cfg = compose_config([*runbook.overrides, *step.overrides, *cli]).cfg
    except UserError:
        return "the sweep's own overrides do not compose (reported above)"
    drafts = [d for d in matrix.get("draft", [cfg.draft.name if cfg.draft.method else "none"])
              if d not in ("none", "null")]
    if len(drafts) != 1:
        return (f"needs exactly one draft in the sweep besides none (found {', '.join(drafts) or 'none'}); "
                f"a schedule is derived per draft")
    try:
        lookahead = max(int(v) for v in matrix.get("lookahead", [str(cfg.lookahead)]))
    except ValueError:
        return "the lookahead values are not whole numbers"
    return [f"draft={drafts[0]}", f"lookahead={lookahead}"]


def expand(runbook: Runbook, cli: list[str], problems: list[str]) -> Runbook:
    """The runbook with every sweep step expanded in place (unchanged without sweeps). The points are
    counted before anything is composed: beyond schema.MAX_POINTS the sweep is refused, not expanded."""
    if not any(s.kind == "sweep" for s in runbook.steps):
        return runbook
    taken = {s.id for s in runbook.steps}
    steps: list[Step] = []
    total = 0
    for s in runbook.steps:
        if s.kind != "sweep" or not s.matrix:
            steps.append(s)
            continue
        too_many = points_problem(s.matrix, f"{runbook.path}: step '{s.id}'", total)
        if too_many:
            problems.append(too_many)
            steps.append(s)
            continue
        total += matrix_points(s.matrix)
        steps += expand_step(runbook, s, cli, taken, problems)
    return dataclasses.replace(runbook, steps=steps)
