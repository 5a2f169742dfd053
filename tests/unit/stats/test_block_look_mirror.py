"""Two back-to-back blocks measured until decided, with a noise estimate that has no paired
component: the look has no estimate yet (its interval [0, inf]), and the comparison and its mirror
say so instead of failing."""

from __future__ import annotations

import math

from llama4spec.stats.noise import prior
from llama4spec.stats.compare import compare


def test_two_blocks_without_a_paired_component_compare_both_ways():
    blocks = [[1.10, 1.12, 1.09], [1.15, 1.11, 1.13]]
    runs = [x for b in blocks for x in b]
    comps = compare({"k2": runs, "none": [1.0] * len(runs)}, 0.95, prior(0.02, 0.04, "test"),
                    blocks={("k2", "none"): blocks}, block_rule=(2, 10))
    ahead, back = comps[("k2", "none")], comps[("none", "k2")]
    assert ahead.verdict == back.verdict == "undecided"
    assert ahead.interval.low == 0 and math.isinf(ahead.interval.high)
    assert back.interval.low == 0 and math.isinf(back.interval.high)
