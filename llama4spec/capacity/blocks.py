"""A capacity step measured in back-to-back blocks (``blocks: J``): for each setting with a draft,
J blocks, each starting a fresh server without speculation and the setting's server together on
the two halves of the devices, searching both (in a block of odd number no speculation first, in
an even one the setting first: a crossover), then stopping both. The blocks go in J rounds, each
visiting the settings in a random order from the step's ``order_seed``.

A block gives one gain: the ratio of its two searches' capacities (each its own search's answer).
A setting's gain is the geometric mean of its blocks' gains with a t interval on their own spread
(J - 1 df): the between-start variance, which a single start of each server leaves to a prior,
is in that spread, measured here (``combine``: pure). Its verdict: more capacity where the interval
lies above 1, less where below, else undecided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from llama4spec.runbook.block_order import rounds
from llama4spec.runbook.matrix import bounded_id, claim_ids

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Planned:
    """The blocks' steps and what the report needs of them."""

    steps: list
    points: list[str]  # every search step
    names: dict[str, str]  # search step -> its setting in words
    pairs: dict[str, str]  # a setting's search step -> its block's no speculation search step
    baseline: str | None  # the first block's search of no speculation


def expand(step, keys, groups: Sequence[Any], labels: Sequence[str], names: Sequence[str], make, taken: set[str],
           at: str, problems: list[str], needs: list[str], ref: str | None) -> Planned | None:
    """The blocks (see the module's docstring); ``groups``: the matrix's servers, exactly one without
    a draft; ``labels``, ``names``: each group's file label and name. None with a problem."""

    base = [i for i, g in enumerate(groups) if not g.cfg.draft.method]
    if len(base) != 1 or len(groups) < 2:
        problems.append(f"{at}: blocks pair each setting with a draft with the one setting without speculation; the "
                        f"matrix gives {len(base)} without and {len(groups) - len(base)} with a draft: sweep draft "
                        f"over none and a draft, e.g. draft: [none, tiny_eagle]")
        return None
    b = base[0]
    cands = [i for i in range(len(groups)) if i != b]
    out, points, named, pairs, previous, first_base = [], [], {}, {}, None, None
    for j, this_round in enumerate(rounds(len(cands), keys.blocks, keys.order_seed), 1):
        base_slot, cand_slot = (1, 0) if j % 2 == 0 else (0, 1)
        for n in this_round:
            i = cands[n]
            sid = f"{step.id}-{labels[i]}-b{j}"
            bsid = f"{step.id}-{labels[b]}-for-{labels[i]}-b{j}"
            ids = [sid, bsid, f"{sid}-search", f"{bsid}-search", f"{sid}-stop", f"{bsid}-stop"]
            ids = [bounded_id(x) for x in ids]
            if not claim_ids(ids, taken, at, "capacity", problems):
                return None
            out.append(make("serve", ids[1], needs=[*needs, *([previous] if previous else step.needs)], slot=base_slot,
                            description=f"capacity '{step.id}': no speculation, block {j} of {keys.blocks} beside "
                                        f"{names[i]} (back-to-back blocks)",
                            overrides=[*keys.overrides, *groups[b].overrides]))
            out.append(make("serve", ids[0], needs=[ids[1]], slot=cand_slot, beside=ids[1],
                            description=f"capacity '{step.id}': server for {names[i]}, block {j}, beside {ids[1]}",
                            overrides=[*keys.overrides, *groups[i].overrides]))
            searches = [(ids[3], ids[1], names[b]), (ids[2], ids[0], names[i])]
            for search, server, name in searches if j % 2 else searches[::-1]:
                out.append(make("search", search, needs=list(needs), server=server, relative_to=ref,
                                settings=keys.settings,
                                description=f"capacity '{step.id}': request capacity of {name}, block {j}"))
            out.append(make("stop", ids[4], server=ids[0]))
            out.append(make("stop", ids[5], server=ids[1]))
            previous = ids[5]
            points += [ids[3], ids[2]]
            named.update({ids[3]: names[b], ids[2]: names[i]})
            pairs[ids[2]] = ids[3]
            first_base = first_base or ids[3]
    return Planned(out, points, named, pairs, first_base)


@dataclass(frozen=True)
class BlockGain:
    """A setting's gain over no speculation from its blocks."""

    name: str
    ratios: tuple[float, ...]  # each block's gain (blocks where either capacity is unknown are left out)
    ratio: float | None
    low: float | None
    high: float | None
    verdict: str  # "more", "less", "undecided" (fewer than 2 blocks: undecided)


def combine(name: str, ratios: Sequence[float], confidence: float = CONFIDENCE) -> BlockGain:
    """The geometric mean of the blocks' gains with a t interval on their log spread (n - 1 df)."""
    from scipy import stats

    good = tuple(r for r in ratios if r is not None and r > 0 and math.isfinite(r))
    if not good:
        return BlockGain(name, good, None, None, None, "undecided")
    logs = [math.log(r) for r in good]
    mean = sum(logs) / len(logs)
    if len(logs) < 2:
        return BlockGain(name, good, math.exp(mean), None, None, "undecided")
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, len(logs) - 1)) * sd / math.sqrt(len(logs))
    low, high = math.exp(mean - half), math.exp(mean + half)
    verdict = "more" if low > 1 else "less" if high < 1 else "undecided"
    return BlockGain(name, good, math.exp(mean), low, high, verdict)


def sentence(g: BlockGain, baseline: str) -> str:
    """A setting's blocks in words."""
    n = len(g.ratios)
    if g.ratio is None:
        return f"{g.name}: no block measured both capacities; no gain over {baseline}"
    if g.low is None:
        return f"{g.name}: {g.ratio:.2f}x {baseline}'s capacity in 1 block: no spread, undecided (give blocks: 2 or more)"
    word = {"more": "more capacity than", "less": "less capacity than", "undecided": "undecided against"}[g.verdict]
    return (f"{g.name} carries {g.ratio:.2f}x [{g.low:.2f}, {g.high:.2f}] the requests of {baseline} over {n} "
            f"back-to-back blocks ({n - 1} df, the blocks' own spread): {word} {baseline}")


def record(gains: Sequence[BlockGain], baseline: str) -> dict[str, Any]:
    """capacity.json's ``blocks``: each setting's blocks, gain and verdict, and the sentence."""
    return {"gains": [{"name": g.name, "blocks": list(g.ratios), "ratio": g.ratio, "low": g.low, "high": g.high,
                       "verdict": g.verdict} for g in gains],
            "sentence": "; ".join(sentence(g, baseline) for g in gains) or "no block measured"}


def markdown(blocks: Mapping[str, Any] | None) -> list[str]:
    """report.md's section of a capacity step in blocks ([] for one not)."""
    if not blocks:
        return []
    lines = ["", "## Back-to-back blocks", "",
             "Each block started a fresh server without speculation beside the setting's and searched both; a "
             "block's gain is the ratio of its two capacities, a setting's gain the geometric mean of its blocks' "
             f"with a {CONFIDENCE:.0%} t interval on their own spread.", "",
             "| setting | gain per block | gain [interval] | verdict |", "|---|---|---|---|"]
    for g in blocks["gains"]:
        per = ", ".join(f"{r:.2f}" for r in g["blocks"]) or "-"
        gain = "-" if g["ratio"] is None else f"{g['ratio']:.2f}x" + (
            f" [{g['low']:.2f}, {g['high']:.2f}]" if g["low"] is not None else "")
        lines.append(f"| {g['name']} | {per} | {gain} | {g['verdict']} |")
    return [*lines, "", blocks["sentence"], ""]
