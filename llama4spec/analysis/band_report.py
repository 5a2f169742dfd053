"""What a sweep banded by input length reports (``analysis.bands``): per band and concurrency the
acceptance per position, the speedup with its interval and verdict and the best lookahead (the
analysis's tables, titled by band), where speculation stops paying, and what vLLM 0.32 lets a user do
about it. Pure: sentences, Markdown and the JSON-able record."""

from __future__ import annotations

import math
from typing import Any

from llama4spec.analysis.bands import Break, breaks
from llama4spec.stats.speedup_results import Analysis

NO_SETTING = ("vLLM 0.32 has no lookahead per context length: num_speculative_tokens is one number for "
              "every request (or one per batch size, draft.lookahead_schedule)")


def _gain(band, iv, verdict) -> str:
    """No speculation's output throughput over the best lookahead's in one band above the break."""
    bounds = f" [{1 / iv.high:.2f}, {1 / iv.low:.2f}]" if iv.low > 0 and math.isfinite(iv.high) else ""
    decided = "declared" if verdict == "slower" else "not declared"
    return (f"{1 / iv.ratio:.2f}x{bounds} the best lookahead's output throughput in {band.label} (speculation "
            f"{decided} slower there)")


def routing(b: Break) -> str | None:
    """What can be done at a located break with vLLM 0.32 (None where none is located): route the
    prompts of the bands from which on speculation is declared slower in every band to a server
    without speculation, with the measured gain there."""
    if not b.located:
        return None
    slower = [i for i in range(len(b.gains)) if all(v == "slower" for _, _, v in b.gains[i:])]
    if not slower:
        return (f"concurrency {b.concurrency}: {NO_SETTING}. Above {b.last_paying.label} no band is declared slower "
                f"either, so the bands measured promise no gain from routing its prompts elsewhere; more runs (or "
                f"server starts) would settle it")
    first = slower[0]
    below = b.last_paying if first == 0 else b.gains[first - 1][0]
    gains = "; ".join(_gain(*g) for g in b.gains[first:] if g[1] is not None)
    between = (f"; in {', '.join(g[0].label for g in b.gains[:first])} neither is declared faster than the other"
               if first > 0 else "")
    return (f"concurrency {b.concurrency}: {NO_SETTING}. What it can do: route prompts longer than {below.high} "
            f"tokens to a server without speculation and keep speculation for shorter ones; measured, no "
            f"speculation delivers {gains}{between}. A speculative server "
            f"started with a max_model_len below the longer prompts refuses them (HTTP 400), which makes such a "
            f"route explicit")


def lines(analysis: Analysis) -> list[str]:
    """The break per concurrency, then what to do about it."""
    found = breaks(analysis)
    return [b.sentence() for b in found] + [r for b in found if (r := routing(b))]


def markdown(analysis: Analysis) -> list[str]:
    """The report's section (nothing for a sweep not banded)."""
    if not analysis.by_band:
        return []
    said = lines(analysis)
    return ["## input length", "",
            "Each input-length band is analysed on its own (its tables above: speedups against no speculation "
            "in the same band); speculation pays in a band where some lookahead is declared faster than no "
            "speculation. No lookahead schedule is derived from bands analysed apart: vLLM's schedule is one k "
            "per batch size for every input length.", "",
            *[f"- {line}" for line in said or ["no concurrency was measured in two bands"]], ""]


def record(analysis: Analysis) -> dict[str, Any] | None:
    """sweep.json's ``input_bands`` (None for a sweep not banded)."""
    if not analysis.by_band:
        return None
    return {
        "bands": [band.record() for band, _ in analysis.by_band],
        "breaks": [{"concurrency": b.concurrency, "paying": [x.label for x in b.paying],
                    "after": b.last_paying.record() if b.last_paying else None,
                    "before": b.first_not.record() if b.first_not else None,
                    "slower": [x.label for x in b.slower], "sentence": b.sentence(), "routing": routing(b)}
                   for b in breaks(analysis)],
    }
