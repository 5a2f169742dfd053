"""The headline of a plain comparison (a ``compare`` step, ``llama4spec compare``): the candidate's
output throughput against the baseline's, and what that rests on. With at least 2 runs a side it
is the sweep's comparison (``stats.compare``: Welch on the mean logs, the between-start term from the
same noise estimate, ``components.pooled``, the same verdicts and margin); with fewer it says that no
interval is possible and how to get one.
"""

from __future__ import annotations

from typing import Sequence

from llama4spec.stats.components import pooled
from llama4spec.stats.equivalence import MARGIN
from llama4spec.stats.noise import Noise
from llama4spec.stats.compare import compare

HOW = ("for an interval, measure each side more than once (repeats: 3 on each bench step, or a sweep with "
       "repeats: auto), and give the comparisons a noise estimate: a profile from `llama4spec calibrate` "
       "(a sweep's noise: PATH), or runs of each side from two or more server starts")


def headline(base: Sequence[float], cand: Sequence[float], prior: Noise | None = None,
             base_starts: Sequence[int] | None = None, cand_starts: Sequence[int] | None = None,
             margin: float = MARGIN) -> str:
    """One line: ``output throughput 441.37 against 215.92: 2.04x ...``, then its interval and
    verdict with the noise estimate it used, or why there is none."""
    base, cand = [float(x) for x in base if x and x > 0], [float(x) for x in cand if x and x > 0]
    if not base or not cand:
        return "output throughput: not measured on both sides; nothing to compare"
    mid_b, mid_c = sorted(base)[len(base) // 2], sorted(cand)[len(cand) // 2]
    head = f"output throughput {mid_c:.2f} against {mid_b:.2f}: {mid_c / mid_b:.2f}x"
    if len(base) < 2 or len(cand) < 2:
        runs = f"{len(cand)} run{'s' * (len(cand) != 1)} against {len(base)}"
        return f"{head} from {runs} of one server start each: too little data for an interval or a verdict; {HOW}"
    runs, starts = {"candidate": cand, "baseline": base}, {"candidate": cand_starts or (), "baseline": base_starts or ()}
    noise = pooled(prior, runs, {k: v for k, v in starts.items() if v})
    c = compare(runs, noise=noise, starts={k: v for k, v in starts.items() if len(set(v)) > 1}, margin=margin)[
        ("candidate", "baseline")]
    iv = c.interval
    said = f"{iv.ratio:.2f}x [{iv.low:.2f}, {iv.high:.2f}] ({100 * iv.confidence:g}%)" if iv else f"{c.ratio:.2f}x"
    return (f"output throughput {mid_c:.2f} against {mid_b:.2f} (medians of {len(cand)} and {len(base)} runs): "
            f"{said}, {c.sentence()} (Welch on log throughput with the between-start term; noise: {noise.text()})")
