"""The speedup model: what the measured acceptance allows, and what drafting costs.

With ``a_i`` the measured probability that draft position ``i`` is accepted (vLLM's per-position
rate: accepted at ``i`` / verification steps), one verification step with lookahead ``k``
yields ``E(k) = 1 + sum_{i<k} a_i`` tokens on average. If drafting cost nothing, speculation
would be ``E(k)`` times faster than decoding one token per target step: that is the upper bound
(the mean acceptance length). Drafting and verifying ``k`` tokens do cost something; with ``c``
the cost of one speculative token relative to one target step,

    speedup(k) = E(k) / (1 + c * k).

``c`` is fitted to the medians of the measured speedups by least squares on
``E(k) / speedup(k) - 1 = c * k``, with a 95% interval; where a fixed per-step drafting overhead
fits better (``1 + c0 + c k``, AIC lower by 2 or more) that model is used (``cost_fit``). The
model then predicts the lookahead that should win. All speedups compare output throughput with
no speculation at the same concurrency.

Every point is the median of its repeated runs, with a 95% interval (``interval``). Settings
at one concurrency compare by the difference of their mean log throughputs (``compare``:
Welch with the between-start term, Holm over the concurrency's pairs), each comparison faster,
slower or undecided. What to deploy (``recommend``) is the setting with the highest median among
those no other is declared faster than, marked undecided unless it is declared faster than every
other: an undecided answer is said, never turned into "no speculation".
"""

from __future__ import annotations

from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Sequence

from llama4spec.stats.compare import compare
from llama4spec.stats.comparison import EQUIVALENT, Comparison
from llama4spec.stats.components import pooled
from llama4spec.stats.cost_fit import fit_cost
from llama4spec.stats.interval import CONFIDENCE
from llama4spec.stats.noise import Noise
from llama4spec.stats.point import (Point, back_to_back, blocks_of, expected_tokens, label, runs, sequential_rule,
                                    server_starts, speedup_bound, starts_of, efficiency)
from llama4spec.stats.speedup_results import Analysis, AtConcurrency, Fit, Pick, Row


def _throughput(p: Point | None) -> float:
    return p.output_throughput if p is not None and p.output_throughput is not None else float("-inf")

def recommend(points: Sequence[Point], base: Point | None, drafts: int = 1,
              comparisons: Mapping[tuple[str, str], Comparison] | None = None, noise: Noise | None = None) -> Pick:
    """What to deploy among one draft's fixed lookaheads and no speculation (``base``).

    The setting with the highest median output throughput among those no other is declared faster
    than (``comparisons``: the concurrency's family; computed over these settings alone when not
    given), on equal medians the cheaper (no speculation, then the smaller lookahead). It is
    decided when it is declared faster than every other, else marked undecided: the higher median
    is the choice with the smaller expected loss under symmetric noise and a loss linear in
    throughput, so an interval spanning 1 never turns it into no speculation.
    """
    spec = [p for p in points if p.speculative and not p.scheduled and p.output_throughput is not None]
    measured = base is not None and base.output_throughput is not None
    candidates = sorted(([base] if measured else []) + spec, key=lambda p: (p.speculative, p.lookahead or 0))
    if not candidates:
        return Pick(None, None, {})
    if comparisons is None:
        comparisons = compare({p.id: runs(p) for p in candidates}, noise=noise, starts=starts_of(candidates))
    beaten = {q.id for q in candidates for c in candidates
              if c.id != q.id and comparisons[(c.id, q.id)].verdict == "faster"}
    best = max((p for p in candidates if p.id not in beaten), key=_throughput)  # first of equal maxima
    why = None
    cheaper = [q for q in candidates if q.id not in beaten and (q.speculative, q.lookahead or 0) <
               (best.speculative, best.lookahead or 0) and comparisons[(q.id, best.id)].verdict == EQUIVALENT]
    if cheaper:  # candidates are ordered cheapest first: no speculation, then the smaller lookahead
        top, best = best, cheaper[0]
        margin = comparisons[(best.id, top.id)].margin or 0.0
        why = (f"equivalent within +-{100 * margin:g}% to {label(top, drafts)}, the highest median (two one-sided "
               f"tests): the {'smaller lookahead' if best.speculative else 'setting without speculation'} is taken")
    against = {label(q, drafts): comparisons[(best.id, q.id)] for q in candidates if q.id != best.id}
    single = bool(against) and all(c.interval is None for c in against.values())
    return Pick(best, label(best, drafts), against, single, why)


def analyse_concurrency(concurrency: int, points: list[Point], category: str | None = None,
                        noise: Noise | None = None, temperature: float = 0.0,
                        margin: float | None = None, block_rule: tuple[int, int, float] | None = None) -> AtConcurrency:
    bases = [p for p in points if not p.speculative]
    base = bases[0] if bases else None
    base_measured = base if base is not None and base.output_throughput is not None else None
    spec = sorted((p for p in points if p.speculative), key=lambda p: (p.draft, p.lookahead))
    fixed = [p for p in spec if not p.scheduled and p.output_throughput is not None]
    # the first setting without speculation is the baseline (as the sequential rule takes it); the
    # others are compared with it like candidates
    others = [p for p in bases[1:] if p.output_throughput is not None] if base_measured else []
    family = ([base_measured] if base_measured else []) + others + fixed
    rule = sequential_rule(family)
    confidence = rule[2] if rule else block_rule[2] if block_rule else CONFIDENCE
    paired = others + fixed  # back to back with the baseline: candidates, or another setting without speculation (A/A)
    comparisons = compare({p.id: runs(p) for p in family}, confidence, noise,
                          starts_of(family), rule[:2] if rule else None, back_to_back(base_measured, paired), margin,
                          blocks_of(base_measured, paired), block_rule[:2] if block_rule and not rule else None)
    fits: dict[str, Fit] = {}
    rows: list[Row] = []
    for p in spec:
        against = None
        if base_measured is not None and p.output_throughput is not None:
            # a point measured under a derived schedule is compared on its own, outside the family
            own = (compare({p.id: runs(p), base.id: runs(base)}, noise=noise, starts=starts_of([p, base]), margin=margin)
                   if p.scheduled else comparisons)
            against = own[(p.id, base.id)]
        speedup = against.ratio if against is not None else None
        bound = p.acceptance_length if p.acceptance_length is not None else (
            speedup_bound(p.rates) if p.rates else None)
        rows.append(Row(p, speedup, bound, efficiency(speedup, bound), None, against))
    drafts = list(dict.fromkeys(p.draft for p in spec if not p.scheduled))
    choices: dict[str, Pick] = {}
    for draft in drafts:
        mine = [r for r in rows if r.point.draft == draft]
        widest = max((r.point for r in mine if r.point.rates), key=lambda p: len(p.rates), default=None)
        cost = fit_cost([(r.point.lookahead, r.bound, r.speedup) for r in mine
                         if r.bound is not None and r.speedup is not None])
        fit = Fit(draft, widest.rates if widest else (), cost.c if cost else None, cost=cost)
        if widest is not None and cost is not None and cost.c is not None:
            fit.curve = [(k, cost.predict(expected_tokens(widest.rates, k), k)) for k in range(1, len(widest.rates) + 1)]
            fit.best = max(fit.curve, key=lambda kv: (kv[1], -kv[0]))
            for r in mine:
                if r.point.lookahead <= len(widest.rates):
                    r.predicted = cost.predict(expected_tokens(widest.rates, r.point.lookahead), r.point.lookahead)
        fits[draft] = fit
        choices[draft] = recommend([r.point for r in mine], base, len(drafts), comparisons)
    pick = recommend(fixed, base, len(drafts), comparisons)
    fastest = max((p for p in points if p.output_throughput is not None and not p.scheduled), key=_throughput,
                  default=None)
    by_acc = max((p for p in spec if p.acceptance_length is not None and not p.scheduled),
                 key=lambda p: p.acceptance_length, default=None)
    against_base = [Row(p, comparisons[(p.id, base.id)].ratio, None, None, None, comparisons[(p.id, base.id)])
                    for p in others]
    return AtConcurrency(concurrency, base, rows, pick.point or base, by_acc, fits, choices, fastest, category, pick,
                         comparisons, noise, rule, temperature, others=against_base)


def points_noise(points: Iterable[Point], prior: Noise | None = None) -> Noise:
    """The noise a sweep's comparisons carry: the components estimated from its own runs (one-way
    random-effects ANOVA on log output throughput, pooled over the settings; the between-start part
    only from settings measured over two or more server starts), combined by df with ``prior`` (a
    profile, or the hardware config's recorded figures); provisional without either
    (``components.pooled``). Back-to-back blocks add the paired within-start component (each
    block's per-pair ratios, ``blocks_of``)."""
    points = list(points)
    bases = [p for p in points if not p.speculative]
    paired = [block for base in bases for blocks in blocks_of(base, points).values() for block in blocks if block]
    return pooled(prior, {p.id: runs(p) for p in points}, {p.id: server_starts(p) for p in points}, paired)


def analyse(points: Iterable[Point], prior: Noise | None = None, noise: Noise | None = None,
            margin: float | None = None, block_rule: tuple[int, int, float] | None = None) -> Analysis:
    """Group by prompt category and concurrency, compare with no speculation in the same group, fit
    the model, find where speculation stops paying (over the points without a category when there
    are any, else over every category). Points at several sampling temperatures are analysed per
    temperature, each on its own (``by_temperature``); the headline fields are the lowest's. Every
    comparison carries ``noise``, by default the sweep's (``points_noise`` of all the points with
    ``prior``); ``margin``: two settings within +-margin of each other are declared equivalent;
    ``block_rule`` (min_blocks, max_blocks, confidence): back-to-back blocks added until decided
    (``stats.compare``)."""
    points = list(points)
    noise = points_noise(points, prior) if noise is None else noise
    temperatures = sorted({p.temperature for p in points})
    if len(temperatures) > 1:
        subs = [(t, analyse([p for p in points if p.temperature == t], noise=noise, margin=margin, block_rule=block_rule))
                for t in temperatures]
        at = sorted((dataclasses.replace(a, temperature_swept=True) for _, sub in subs for a in sub.at),
                    key=lambda a: (a.category or "", a.concurrency, a.temperature))
        first = subs[0][1]
        return Analysis(at, first.pays_up_to, first.stops_paying_at, noise, subs)
    by_c: dict[tuple[str, int], list[Point]] = {}
    for p in points:
        by_c.setdefault((p.category or "", p.concurrency), []).append(p)
    temperature = temperatures[0] if temperatures else 0.0
    at = [analyse_concurrency(c, by_c[(cat, c)], cat or None, noise, temperature, margin, block_rule)
          for cat, c in sorted(by_c)]
    plain = [a for a in at if a.category is None] or at
    paying = [a.concurrency for a in plain if a.pays]
    pays_up_to = max(paying) if paying else None
    stops = None
    if pays_up_to is not None:
        later = sorted((a for a in plain if a.concurrency > pays_up_to and a.best_speedup is not None),
                       key=lambda a: a.concurrency)
        stops = later[0].concurrency if later else None
    return Analysis(at, pays_up_to, stops, noise)


def temperature_findings(analysis: Analysis) -> list[str]:
    """One sentence per concurrency (points without a category) measured at several temperatures:
    whether the temperature changes what to deploy there, and how."""
    if not analysis.by_temperature:
        return []
    by_c: dict[int, list[AtConcurrency]] = {}
    for a in analysis.at:
        if a.category is None and a.pick is not None and a.pick.point is not None:
            by_c.setdefault(a.concurrency, []).append(a)
    lines = []
    for c, groups in sorted(by_c.items()):
        if len(groups) < 2:
            continue
        picks = [(a.temperature, a.pick.label or label(a.pick.point), a.pick.decided) for a in groups]
        said = ", ".join(f"{name} at temperature {t:g}{'' if decided else ' (undecided)'}" for t, name, decided in picks)
        if len({name for _, name, _ in picks}) > 1:
            lines.append(f"concurrency {c}: temperature changes the recommendation: {said}")
        else:
            lines.append(f"concurrency {c}: temperature does not change the recommendation ({said})")
    return lines
