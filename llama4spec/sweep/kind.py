"""A ``sweep`` step: the matrix expanded into serve/bench/stop steps before it (see
``sweep.expand``); this step reads their records, analyses them and writes the report, the
analysis JSON and CSV, and the plots into its own directory (``sweep.report``, which also
gives its part of ``llama4spec report`` and of report.html)."""

from __future__ import annotations

from typing import Any

from dataclasses import dataclass

from llama4spec.files import number
from llama4spec.runbook import fields
from llama4spec.runbook.fields import AUTO
from llama4spec.runbook.matrix import TooLarge, check_matrix, matrix_points, points_problem
from llama4spec.runbook.spec import Traits
from llama4spec.runbook.steps.base import BaseKind
from llama4spec.runbook import bands
from llama4spec.sweep.rule import MAX_BLOCK_RUNS, Rule
from llama4spec.sweep.planned import AUTO_DESIGN, GAP_S, INTERLEAVED, SEQUENTIAL, design_of
from llama4spec.sweep.expand import expand_step
from llama4spec.sweep.registry import DESIGN_KEYS, DESIGNS
from llama4spec.frontier.price import MAX_PRICE
from llama4spec.sweep.frontier_part import describe as frontier_lines
from llama4spec.sweep.report import artifacts, design_lines, linked, merge_part, page_part, run_report
from llama4spec.stats.interval import CONFIDENCE
from llama4spec.stats.looks import MAX_REPEATS, MIN_REPEATS
from llama4spec.stats.checks import margin_problem, precision_problem
from llama4spec.stats.equivalence import MARGIN

MAX_STARTS, MAX_SEED = 20, 2 ** 31 - 1  # starts: N (each a server start per setting), its order_seed


def _margin(raw: dict, key: str, at: str, problems: list[str]) -> float:
    value = raw.get(key, MARGIN)
    problem = margin_problem(value, f"{at}: {key}")
    if problem:
        problems.append(problem)
        return MARGIN
    return float(value)


def _precision(raw: dict, key: str, at: str, problems: list[str]) -> float | None:
    value = raw.get(key)
    problem = None if value is None else precision_problem(value, f"{at}: {key}")
    if problem:
        problems.append(problem)
    return None if value is None or problem else float(value)


def _matrix(raw: dict, key: str, at: str, problems: list[str]) -> dict[str, list[str]] | None:
    matrix, found = check_matrix(raw.get(key), at)
    problems.extend(found)
    return matrix if matrix or isinstance(matrix, TooLarge) else None


@dataclass
class Keys:
    matrix: dict[str, list[str]] | None = fields.custom(_matrix, default=None)  # config key -> values
    overrides: list[str] = fields.overrides()
    extra_args: list[str] = fields.texts()  # more `vllm bench serve` flags, for every point
    verify_schedule: bool = fields.flag()  # also measure the lookahead schedule derived from its points
    repeats: int | str = fields.repeats(3)  # counted runs per point, or auto: until its comparisons are decided
    warmup: int = fields.count(0, 0, fields.MAX_WARMUP)  # warm-up requests per point, unrecorded
    rule: Rule = fields.group(Rule)  # repeats: auto: min_repeats, max_repeats, confidence (written beside these)
    skip_dominated: bool = fields.flag(True)  # a larger lookahead whose bound cannot reach the leader is not started
    revisit: bool = fields.flag()  # repeats: auto: start again the servers whose points the first pass left undecided
    # interleaved: no speculation stays up beside each candidate on the other half of the devices, their
    # runs alternate (A B A B ...) and each speedup is the paired ratio of back-to-back runs
    design: str = fields.choice(*DESIGNS)
    # sequential: each setting's server started this many times, in rounds of a seeded random order, so the
    # sweep's own runs estimate the between-start noise
    starts: int = fields.count(1, 1, MAX_STARTS)
    order_seed: int = fields.count(0, 0, MAX_SEED)  # starts: the seed of that order (recorded in plan.json)
    swap_devices: bool = fields.flag()  # interleaved: no speculation on the second half of the devices, not the first
    gap_s: float = fields.seconds(GAP_S, 600.0)  # interleaved: the least pause between one server's last request and the other's run
    noise: str | None = fields.text()  # a noise.json (`llama4spec calibrate`): the prior of every comparison
    margin: float = fields.custom(_margin, default=MARGIN)  # equivalent: a ratio within +-margin, decided by two one-sided tests
    precision: float | None = fields.custom(_precision, default=None)  # the relative half-width wanted: the design's starts and runs
    # a device-hour price (a GPU's; a CPU server counts as one device): the frontier's price per million
    # output tokens, with and without the draft
    price: float | None = fields.number(None, 0, MAX_PRICE, optional=True)
    # input-length bands, each measured and analysed on its own (``runbook.bands``): lengths of random
    # prompts ([16, 64, 256]) or [LOW, HIGH] token counts of a prompt file's prompts
    bands: list | None = fields.custom(bands.read, default=None)


def noise_lines(prior: dict[str, Any] | None, margin: float, runs: tuple[int, int] = (MIN_REPEATS, MAX_REPEATS),
                confidence: float = CONFIDENCE, precision: float | None = None,
                max_repeats: int | None = None, starts: int | None = None, blocks: bool = False) -> list[str]:
    """The noise a sweep's comparisons start from, and its margin of equivalence (the dry run);
    from a profile (its costs recorded), the design its components and costs call for and the
    precision it is expected to reach (``runs``: the fewest and most runs a point gets; ``blocks``:
    back-to-back blocks, ``starts`` of them, each of ``runs`` pairs); with the
    ``precision`` key, the starts, runs and time it needs and whether ``max_repeats`` or ``starts``
    fall short of them."""
    from llama4spec.stats.design import block_lines, design_lines
    from llama4spec.stats.noise import noise_from_record

    noise = noise_from_record(prior)
    if noise is None:
        return []
    lines = [f"noise: {noise.text()}; pooled by df with the sweep's own estimate where its settings have runs "
             f"from two or more server starts"]
    if isinstance(prior.get("checked"), str):
        lines.append(f"profile: {prior['checked']}")
    costs = prior.get("costs") if isinstance(prior.get("costs"), dict) else {}
    start_s, run_s = number(costs.get("start_s"), 0, 1e6), number(costs.get("run_s"), 0, 1e6)
    if noise.provisional is None and blocks:
        lines += block_lines(noise, starts or 1, runs[1], confidence, precision)
    elif noise.provisional is None:
        lines += design_lines(noise, (start_s, run_s) if start_s and run_s else None, runs, precision, confidence,
                              max_repeats, starts)
    elif precision is not None:
        lines.append(f"precision: +-{100 * precision:g}% is not planned: the noise above is provisional")
    return lines + [f"equivalence: two settings within +-{100 * margin:g}% of each other are declared equivalent "
                    f"(two one-sided tests; margin: sets it)"]


def check(keys: Keys, at: str, problems: list[str], state: dict[str, Any]) -> None:
    """At most MAX_POINTS points over every sweep of the runbook: a matrix beyond them is refused
    (never expanded)."""
    bands.add_axis(keys, at, problems)  # a client axis, counted with the points
    if isinstance(keys.matrix, TooLarge):  # an axis beyond its bound: refused (check_matrix said why)
        keys.matrix = None
        state["too_large"] = True
    if keys.matrix:
        before = state.get("points", 0)
        too_many = points_problem(keys.matrix, at, before)
        if too_many:
            problems.append(too_many)
            keys.matrix = None
            state["too_large"] = True  # nothing of the runbook is planned (composed) then
        else:
            state["points"] = before + matrix_points(keys.matrix)
    problems.extend(fields.warmup_flag_problems(keys.extra_args, at))
    problems.extend(fields.own_flag_problems(keys.extra_args, at, fields.BENCH_OWN_FLAGS))


def conflicts(keys: Keys, at: str, written: frozenset[str]) -> list[str]:
    """Keys that contradict one another: revisit without repeats: auto, min above max repeats, a
    key of another design than the sweep's (as written in the runbook)."""
    problems = []
    if keys.revisit and keys.repeats != AUTO:
        problems.append(f"{at}: revisit: true restarts the servers of points still undecided, which needs "
                        f"'repeats: auto' (this step has repeats: {keys.repeats}); set repeats: auto or drop revisit")
    problems.extend(f"{at}: {p}" for p in keys.rule.problems())
    if keys.bands and keys.verify_schedule:
        problems.append(f"{at}: verify_schedule measures one lookahead per batch size for every input length, and "
                        f"bands analyses each band apart; drop one of them")
    problems.extend(_starts_problems(keys, at, written))
    for design, names in DESIGN_KEYS.items():
        idle = [name for name in names if name in written]
        if idle and keys.design not in (design, AUTO_DESIGN):
            problems.append(f"{at}: {', '.join(idle)} act only in the {design} design, and this sweep's design is "
                            f"{keys.design}; drop {', '.join(idle)} or set design: {design}")
    return problems


def _starts_problems(keys: Keys, at: str, written: frozenset[str]) -> list[str]:
    """starts: N starts each setting's server N times (with design: interleaved, N back-to-back
    blocks per candidate): not with repeats: auto (whose further starts are revisit's)."""
    if keys.starts == 1:
        blocks = keys.design != SEQUENTIAL and keys.repeats == AUTO  # blocks added one at a time, in rounds
        return [f"{at}: order_seed orders the starts of starts: N, and this sweep starts each server once; "
                f"drop order_seed or set starts: N (e.g. 3)"] if "order_seed" in written and not blocks else []
    if keys.repeats == AUTO and keys.design == INTERLEAVED:
        return [f"{at}: starts: {keys.starts} fixes the back-to-back blocks, and repeats is auto, which adds them one "
                f"at a time from min_repeats to max_repeats blocks; drop starts (set min_repeats and max_repeats), or "
                f"give repeats: N (runs a block) with starts: {keys.starts}"]
    if keys.repeats == AUTO:
        return [f"{at}: starts: {keys.starts} gives every start a fixed number of runs, and repeats is auto; give "
                f"repeats: N (e.g. 3), or keep repeats: auto and start undecided servers again with revisit: true"]
    return []



def plan(ctx, p) -> None:
    """Its files and the noise its comparisons start from (``runbook.noise_prior.at_plan``)."""
    from llama4spec.runbook.noise_prior import at_plan

    p.artifacts = artifacts(p.dir)
    if p.step.keys.matrix and p.step.points:  # expanded (a sweep refused is neither expanded nor composed)
        p.step.expanded.prior = at_plan(ctx, p, p.step.keys.noise, p.step.keys.overrides)
        _block_runs_from_costs(ctx, p)


def _block_runs_from_costs(ctx, p) -> None:
    """Blocks added until decided, with a profile's costs: the pairs a block from Kalibera and
    Jones' rule (``stats.design.runs_per_block``; a start pair costs two server starts, a run
    pair two runs) instead of ``BLOCK_RUNS``, set on the sweep's block bench steps (planned before it)."""
    from llama4spec.stats.design import runs_per_block
    from llama4spec.stats.noise import Component, Noise, noise_from_record

    keys, st = p.step.keys, p.step.expanded
    costs = (st.prior or {}).get("costs")
    noise = noise_from_record(st.prior)
    if keys.repeats != AUTO or st.block_runs is None or noise is None or noise.provisional or not isinstance(costs, dict):
        return
    start_s, run_s = number(costs.get("start_s"), 1e-6, 1e6), number(costs.get("run_s"), 1e-6, 1e6)
    if start_s is None or run_s is None:
        return
    if noise.paired is None:  # a pair's log ratio of two runs: twice the within-start variance
        noise = Noise(noise.between, noise.within, Component(2 * noise.within.var, noise.within.df, noise.within.source))
    design = runs_per_block(noise, 2 * start_s, 2 * run_s, cap=MAX_BLOCK_RUNS)
    st.block_runs = design.runs
    st.block_why = design.why
    for q in ctx.planned.values():
        k = q.step.keys
        if getattr(k, "block", False) and (getattr(k, "adds_to", None) or q.id) in st.points:
            k.repeats = design.runs


def execute(run, p) -> dict[str, Any]:
    text, record = run_report(run.plan, p, run.console, run.not_run())
    run.keep_comparison(p.id, linked(text, p.id))
    return record


def describe(p, say) -> None:
    keys, st = p.step.keys, p.step.expanded
    if keys.matrix:
        say("    matrix: " + " x ".join(f"{k} [{', '.join(v)}]" for k, v in keys.matrix.items()))
        say(f"    report over {len(st.points)} points (speedup, efficiency, best lookahead, plots)")
        for line in bands.describe(keys.bands) if keys.bands else []:
            say(f"    {line}")
        for line in design_lines(st.design_record(keys)) + frontier_lines(keys.matrix, keys.price):
            say(f"    {line}")
        rule = keys.rule
        runs = (rule.min_repeats, rule.max_repeats) if keys.repeats == "auto" else (keys.repeats, keys.repeats)
        cap = rule.max_repeats if keys.repeats == "auto" else None
        blocks = st.design_record(keys).get("blocks")
        starts = keys.starts
        if blocks is not None:  # blocks of block_runs pairs: from min_repeats blocks on, with repeats: auto
            starts = rule.min_repeats if keys.repeats == "auto" else keys.starts
            runs, cap = (blocks["runs"], blocks["runs"]), None
        for line in noise_lines(st.prior, keys.margin, runs, rule.confidence, keys.precision, cap, starts,
                                blocks is not None):
            say(f"    {line}")


KIND = BaseKind("sweep", Keys, Traits(expands=True, merges=True, measures=True, decides=True, describe_first=True),
                plan, execute, describe, check=check, conflicts=conflicts, expand=expand_step,
                plan_record=lambda step: {"design": design_of(step),
                                          **({"price": step.keys.price} if step.keys.price is not None else {})},
                merge_part=merge_part, page_part=page_part)
