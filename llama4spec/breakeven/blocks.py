"""A breakeven step measured in back-to-back blocks (``blocks: J``): each server of the map (each
acceptance length of the grid, and the draft itself) started J times, every time together with a
fresh server without speculation on the other half of the devices, ``repeats`` pairs of runs
alternating at each concurrency, then both stopped. The blocks go in J rounds, each visiting every
server once in a random order from the step's ``order_seed`` (drift does not line up with a
point); block j + 1 swaps the halves (a crossover).

Each block gives one speedup per concurrency: the ratio of the geometric means of its pairs' two
sides. A point's speedup is then the geometric mean of its J blocks' speedups with a paired t
interval on their own spread (J - 1 df): the between-start variance is in that spread, measured here,
not taken from a prior. The map is built from those ratios as from throughputs against a baseline
of ratio 1 with no between-start term (``as_ratios``), so its fit, break-even, predictions and
self-check rest on the blocks' spread alone.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from llama4spec.breakeven.map_fit import Runs
from llama4spec.runbook.block_order import rounds
from llama4spec.runbook.matrix import bounded_id, claim_ids
from llama4spec.sweep.planned import GAP_S
from llama4spec.stats.noise import Noise, prior

SOURCE = "the blocks' own spread (each speedup paired block by block; J - 1 df)"


def expand(step, keys, servers: Sequence[tuple[str, list[str], str]], make, taken: set[str],
           at: str, problems: list[str]) -> tuple[list, list[str]] | None:
    """The blocks' steps and the map's points (each candidate's bench step of each block, then no
    speculation's collecting ones); None with a problem where a generated id is taken.
    ``servers``: (name, overrides, what) per server of the map, no speculation's first."""

    (_, base_overrides, _), cands = servers[0], list(servers[1:])
    out: list = []
    cand_points: list[str] = []
    base_points: list[str] = []
    previous: str | None = None
    for j, this_round in enumerate(rounds(len(cands), keys.blocks, keys.order_seed), 1):
        base_slot, cand_slot = (1, 0) if j % 2 == 0 else (0, 1)
        for i in this_round:
            name, overrides, what = cands[i]
            sid, bsid = bounded_id(f"{step.id}-{name}-b{j}"), bounded_id(f"{step.id}-none-{name}-b{j}")
            mine = [bounded_id(f"{sid}-c{c}") for c in keys.concurrencies]
            theirs = [bounded_id(f"{bsid}-c{c}") for c in keys.concurrencies]
            ids = [sid, bsid, *mine, *theirs, bounded_id(f"{sid}-stop"), bounded_id(f"{bsid}-stop")]
            if not claim_ids(ids, taken, at, "breakeven", problems):
                return None
            out.append(make("serve", bsid, needs=[previous] if previous else list(step.needs), slot=base_slot,
                            description=f"breakeven '{step.id}': no speculation, block {j} of {keys.blocks} beside "
                                        f"{what} (back-to-back blocks)",
                            overrides=[*keys.overrides, *base_overrides]))
            out.append(make("serve", sid, needs=[bsid], slot=cand_slot, beside=bsid,
                            description=f"breakeven '{step.id}': server for {what}, block {j}, beside {bsid}",
                            overrides=[*keys.overrides, *overrides]))
            for c, bid, base_bid in zip(keys.concurrencies, mine, theirs):
                out.append(make("bench", bid, server=sid, label=bid, extra_args=list(keys.extra_args),
                                overrides=[f"bench.max_concurrency={c}"], repeats=keys.repeats, warmup=keys.warmup,
                                pair_with=base_bid, gap_s=GAP_S, block=True, start=j))
            for c, base_bid in zip(keys.concurrencies, theirs):
                out.append(make("bench", base_bid, server=bsid, label=base_bid, extra_args=list(keys.extra_args),
                                overrides=[f"bench.max_concurrency={c}"], repeats=keys.repeats, warmup=keys.warmup,
                                paired=True, block=True, start=j))
            out.append(make("stop", ids[-2], server=sid))
            out.append(make("stop", ids[-1], server=bsid))
            previous = ids[-1]
            cand_points += mine
            base_points += theirs
    return out, [*cand_points, *base_points]


def block_ratio(mine: Sequence[float], theirs: Sequence[float]) -> float | None:
    """A block's speedup: the ratio of the geometric means of its two sides' counted throughputs."""
    if not mine or not theirs or not all(t > 0 and math.isfinite(t) for t in [*mine, *theirs]):
        return None
    return math.exp(sum(map(math.log, mine)) / len(mine) - sum(map(math.log, theirs)) / len(theirs))


def as_ratios(paired: Mapping[str, str], base: Sequence[Runs], synthetic: Sequence[Runs],
              real: Sequence[Runs]) -> tuple[list[Runs], list[Runs], list[Runs], list[str]]:
    """The map's input from blocks (``report.runs_of``'s, every block a point of its own): each grid
    length's and the draft's blocks as one ``Runs`` whose throughputs are its blocks' speedups (its
    acceptance: every block's), and a baseline of ratio 1 at each concurrency. ``paired``: a
    candidate's point -> its block's no speculation point. Returns (baseline, synthetic, real, notes
    on what was left out: a block without a counted pair, a point with fewer than 2 blocks)."""
    by_id = {r.label: r for r in base}
    groups: dict[tuple, list[tuple[Runs, float]]] = {}
    notes = []
    for r in [*synthetic, *real]:
        other = by_id.get(paired.get(r.label, ""))
        ratio = block_ratio(r.throughputs, other.throughputs) if other is not None else None
        if ratio is None:
            notes.append(f"{r.label}: its block has no counted pair; left out")
            continue
        groups.setdefault((r.lookahead, r.set_length, r.concurrency), []).append((r, ratio))
    out_synthetic, out_real, widest = [], [], {}
    for (k, length, c), members in groups.items():
        first = members[0][0]
        if len(members) < 2:
            notes.append(f"{first.label}: one counted block, no spread; left out")
            continue
        widest[c] = max(widest.get(c, 2), len(members))
        runs = Runs(c, tuple(x for _, x in members), k, length, tuple(a for r, _ in members for a in r.acceptance),
                    first.label)
        (out_real if length is None else out_synthetic).append(runs)
    return [Runs(c, (1.0,) * n, label=f"no speculation (ratio 1), c={c}") for c, n in widest.items()], \
        out_synthetic, out_real, notes


def noise(blocks: int) -> Noise:
    """The map's noise with blocks: no between-start term (the blocks' spread holds it)."""
    return prior(0.0, 0.0, SOURCE, between_df=blocks - 1, within_df=blocks - 1)
