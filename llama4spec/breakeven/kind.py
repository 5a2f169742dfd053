"""A ``breakeven`` step: what speculation costs this engine, apart from any draft.

It expands, in order, into: a server without speculation; per lookahead, one server per
acceptance length of its grid (``grid`` values from 1.0, every draft token rejected, to k + 1,
all accepted) with vLLM's synthetic acceptance (``draft.synthetic_acceptance_length``) and the
step's draft proposing; and, with ``place: true``, the draft itself at each lookahead. Each server
is benchmarked at every concurrency (``repeats`` counted runs each), then stopped before the next
starts. This step then reads their records and writes the map (``breakeven.map_fit``):
breakeven.md, breakeven.json and breakeven.png.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama4spec.runbook.block_order import MAX_BLOCKS, side_by_side_problem
from llama4spec.breakeven.blocks import expand as expand_blocks
from llama4spec.files import plain
from llama4spec.runbook import fields
from llama4spec.runbook.matrix import bounded_id, claim_ids, shared_config
from llama4spec.runbook.spec import Traits
from llama4spec.runbook.steps.base import BaseKind

MAX_GRID = 12  # acceptance lengths a lookahead
MAX_VALUES = 16  # lookaheads, concurrencies


def _ints(low: int, high: int):
    def read(raw: dict, key: str, at: str, problems: list[str]) -> list[int]:
        value = raw.get(key)
        if value is None:
            return []
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        ok = isinstance(value, list) and 0 < len(value) <= MAX_VALUES and all(
            isinstance(v, int) and not isinstance(v, bool) and low <= v <= high for v in value)
        if not ok or len(set(value)) != len(value):
            problems.append(f"{at}: '{key}' must be a list of up to {MAX_VALUES} distinct whole numbers from {low} to "
                            f"{high}, e.g. {key}: [1, 3]")
            return []
        return list(value)
    return read


@dataclass
class Keys:
    lookaheads: list[int] = fields.custom(_ints(1, 64), default_factory=list)  # speculative tokens
    concurrencies: list[int] = fields.custom(_ints(1, 4096), default_factory=list)  # bench.max_concurrency
    grid: int = fields.count(4, 2, MAX_GRID)  # acceptance lengths a lookahead, evenly from 1.0 to k + 1
    place: bool = fields.flag(True)  # also measure the draft itself and place it on the map
    overrides: list[str] = fields.overrides()  # every server's (the draft whose cost is measured among them)
    extra_args: list[str] = fields.texts()  # more `vllm bench serve` flags, for every run
    repeats: int = fields.count(3, 2, fields.MAX_REPEATS)  # counted runs per server and concurrency
    warmup: int = fields.count(0, 0, fields.MAX_WARMUP)  # warm-up requests per point, unrecorded
    noise: str | None = fields.text()  # a noise.json (`llama4spec calibrate`): the between-start term of its ratios
    draft_from: str | None = fields.text()  # a draft measured earlier (a bench step's directory or record, a
    #   sweep.json): placed on the map too (``breakeven.draft_from``)
    given: list[Any] = field(default_factory=list)  # generated: the drafts draft_from holds (``Given``)
    points: list[str] = field(default_factory=list)  # generated: its bench steps
    blocks: int = fields.count(0, 0, MAX_BLOCKS)  # back-to-back blocks: each server started this many times beside a
    #   fresh server without speculation, its speedups from the blocks' own spread (``breakeven.blocks``); 0: one start each
    order_seed: int = fields.count(0, 0, 2 ** 31 - 1)  # blocks: the seed of each round's order
    prior: dict[str, Any] | None = None  # generated: the noise its ratios carry (``noise_record``)

    @property
    def matrix(self) -> dict[str, list[str]]:
        """Its size as a matrix (``runbook.matrix.expand`` counts every expanding step's points)."""
        maps = len(self.lookaheads) * (self.grid + int(self.place))
        servers = [str(i) for i in range(2 * maps * self.blocks if self.blocks else 1 + maps)]
        return {"server": servers, "bench.max_concurrency": [str(c) for c in self.concurrencies]}

    def design_record(self) -> dict[str, Any]:
        design = "blocks" if self.blocks else "sequential"
        return {"design": design, "asked": design, **({"noise_prior": self.prior} if self.prior else {})}


def lengths(k: int, grid: int) -> list[float]:
    """The grid of acceptance lengths for lookahead k: ``grid`` values evenly from 1.0 to k + 1."""
    return [round(1.0 + k * i / (grid - 1), 3) for i in range(grid)]


def check(keys: Keys, at: str, problems: list[str], state: dict[str, Any]) -> None:
    for key in ("lookaheads", "concurrencies"):
        if not getattr(keys, key):
            problems.append(f"{at}: a breakeven step needs '{key}', e.g. lookaheads: [1, 3] and concurrencies: [1, 4]")
    problems.extend(fields.warmup_flag_problems(keys.extra_args, at))
    problems.extend(fields.own_flag_problems(keys.extra_args, at, fields.BENCH_OWN_FLAGS))
    if keys.blocks == 1:
        problems.append(f"{at}: 'blocks' is 1, which measures no spread between blocks; give 2 or more (e.g. 4), "
                        f"or 0 for one start a server")
    if keys.blocks and keys.noise:
        problems.append(f"{at}: with 'blocks' the map's noise is the blocks' own spread; drop 'noise'")


def _label(length: float) -> str:
    return f"{length:g}".replace(".", "_")


def expand(runbook, step, cli: list[str], taken: set[str], make, problems: list[str], environ=None) -> list:
    """The servers and bench runs the map needs (see the module's docstring), then this step."""
    at = f"{runbook.path}: step '{step.id}'"
    keys = step.keys
    cfg = shared_config(runbook, step, cli, problems)
    if cfg is None:
        return [step]
    if cfg.draft.method is None:
        problems.append(f"{at}: a break-even map measures what verifying a draft's tokens costs; name the draft in "
                        f"its overrides (draft=tiny_eagle_imperfect, draft=eagle_llama4_scout)")
        return [step]
    if cfg.draft.synthetic_acceptance_length is not None or cfg.draft.synthetic_acceptance_rates is not None:
        problems.append(f"{at}: the step sets the synthetic acceptance of each server itself; drop "
                        f"draft.synthetic_acceptance_* from its overrides")
        return [step]
    servers: list[tuple[str, list[str], str]] = [("none", ["draft=none"], "no speculation")]
    for k in keys.lookaheads:
        for length in lengths(k, keys.grid):
            servers.append((f"k{k}-L{_label(length)}", [f"lookahead={k}", f"draft.synthetic_acceptance_length={length}"],
                            f"k={k}, synthetic acceptance length {length:g}"))
        if keys.place:
            servers.append((f"k{k}-draft", [f"lookahead={k}"], f"k={k}, the draft {cfg.draft.name} itself"))
    if keys.blocks:
        why = side_by_side_problem(cfg)
        if why is not None:
            problems.append(f"{at}: blocks: {why}; drop 'blocks' to start each server once")
            return [step]
        made = expand_blocks(step, keys, servers, make, taken, at, problems)
        if made is None:
            return [step]
        out, points = made
        return [*out, dataclasses.replace(step, needs=list(dict.fromkeys([*step.needs, *points])),
                                          keys=dataclasses.replace(keys, points=points))]
    out, points, previous = [], [], None
    for name, overrides, what in servers:
        sid = bounded_id(f"{step.id}-{name}")
        ids = [sid, *(bounded_id(f"{sid}-c{c}") for c in keys.concurrencies), bounded_id(f"{sid}-stop")]
        if not claim_ids(ids, taken, at, "breakeven", problems):
            return [step]
        out.append(make("serve", sid, needs=[previous] if previous else list(step.needs),
                        description=f"breakeven '{step.id}': server for {what}",
                        overrides=[*keys.overrides, *overrides]))
        for c, bid in zip(keys.concurrencies, ids[1:-1]):
            out.append(make("bench", bid, server=sid, label=bid, extra_args=list(keys.extra_args),
                            overrides=[f"bench.max_concurrency={c}"], repeats=keys.repeats, warmup=keys.warmup))
            points.append(bid)
        out.append(make("stop", ids[-1], server=sid))
        previous = ids[-1]
    return [*out, dataclasses.replace(step, needs=list(dict.fromkeys([*step.needs, *points])),
                                      keys=dataclasses.replace(keys, points=points))]


def artifacts(p) -> dict[str, Any]:
    return {"report": p.dir / "breakeven.md", "analysis": p.dir / "breakeven.json", "plot": p.dir / "breakeven.png"}


def plan(ctx, p) -> None:
    """Its files and the noise its ratios carry (``runbook.noise_prior.at_plan``)."""
    from llama4spec.runbook.noise_prior import at_plan

    p.artifacts = artifacts(p)
    keys = p.step.keys
    if keys.points:  # expanded (a step refused is not composed)
        keys.prior = None if keys.blocks else at_plan(ctx, p, keys.noise, keys.overrides)
        if keys.draft_from:
            _read_draft(ctx, p)


def _read_draft(ctx, p) -> None:
    """The drafts ``draft_from`` holds, read and checked now (a dry run too): every problem one line."""
    from llama4spec.breakeven.draft_from import FIX, read, resolve

    keys = p.step.keys
    path = resolve(keys.draft_from, [ctx.runbook.path.parent, Path.cwd()])
    if path is None:
        ctx.report(p.id, [f"draft_from '{plain(keys.draft_from)}' does not exist; {FIX}"])
        return
    first = ctx.planned.get(keys.points[0])
    target = first.composed.cfg.target.model if first is not None and first.composed is not None else None
    keys.given, problems = read(path, target, keys.lookaheads, keys.concurrencies)
    p.inputs["draft_from"] = path
    ctx.report(p.id, problems)


def execute(run, p) -> dict[str, Any]:
    from llama4spec.breakeven.report import run_report

    text, record = run_report(run.plan, p, run.console, run.not_run())
    run.keep_comparison(p.id, text.replace("](breakeven.png)", f"]({p.id}/breakeven.png)"))
    return record


def describe(p, say) -> None:
    keys = p.step.keys
    for k in keys.lookaheads:
        say(f"    k={k}: synthetic acceptance lengths {', '.join(f'{x:g}' for x in lengths(k, keys.grid))}"
            + (", and the draft itself" if keys.place else ""))
    if keys.blocks:
        say(f"    back-to-back blocks: each server started {keys.blocks} times beside a fresh server without speculation "
            f"(rounds in a random order from order_seed {keys.order_seed}), {keys.repeats} pairs of runs a block at each "
            f"concurrency; each speedup from its blocks' own spread ({keys.blocks - 1} df)")
    say(f"    concurrencies {', '.join(map(str, keys.concurrencies))}, {keys.repeats} runs each; against no "
        f"speculation: the speedup curve, the break-even acceptance length and the cost of k=0, with intervals"
        + ("; the draft placed on the map and the self-check" if keys.place else ""))
    for g in keys.given:
        measured = f", its speedup {g.speedup.value:.2f} as recorded" if g.speedup is not None else ""
        say(f"    the draft from {plain(keys.draft_from)}: {g.label} at k={g.lookahead}, concurrency {g.concurrency}, "
            f"acceptance length {sum(g.acceptance) / len(g.acceptance):.2f} (vLLM's counters, {len(g.acceptance)} "
            f"run(s)){measured}: placed on the map")
    from llama4spec.stats.noise import noise_from_record

    noise = noise_from_record(keys.prior)
    if noise is not None:
        say(f"    noise: {noise.text()}")


KIND = BaseKind("breakeven", Keys, Traits(expands=True, merges=True, measures=True, describe_first=True),
                plan, execute, describe, check=check, expand=expand)
