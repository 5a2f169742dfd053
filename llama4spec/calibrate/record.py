"""What a calibration measured, read from its run directory: the starts' runs, the costs, where it
ran, the components (``stats.components``) and the A/A check; written as noise.json."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from llama4spec.stats.blocks import block_interval
from llama4spec.stats.components import estimate
from llama4spec.stats.equivalence import equivalent
from llama4spec.stats.interval import Interval
from llama4spec.stats.noise import Noise
from llama4spec.stats.profile import Fingerprint, Profile
from llama4spec.stats.ratio import ratio_interval
from llama4spec.calibrate.design import BENCH_ID
from llama4spec.calibrate.settings import Settings
from llama4spec.errors import UserError



@dataclass(frozen=True)
class AACheck:
    """Every pair of starts compared as if they were two settings (the same setting: A/A)."""

    pairs: int
    declared: int  # intervals at ``confidence`` that exclude 1
    confidence: float
    equivalent: int = 0  # pairs declared equivalent within +-margin (two one-sided tests)
    margin: float = 0.02

    @property
    def rate(self) -> float:
        return self.declared / self.pairs if self.pairs else 0.0

    def sentence(self) -> str:
        return (f"A/A: {self.declared} of {self.pairs} pairs of starts declared different at "
                f"{100 * self.confidence:g}% ({100 * self.rate:.0f}%, against {100 * (1 - self.confidence):.0f}% "
                f"expected of identical settings; the pairs share starts, so they are not independent); "
                f"{self.equivalent} declared equivalent within +-{100 * self.margin:g}%")


def read_runs(run_dir: Path) -> tuple[dict[int, list[float]], dict[tuple[int, str], list[float]]]:
    """start -> its counted runs' output throughputs (sequential), and (block, side) -> the runs of
    each side (back to back), from the bench records."""
    from llama4spec.files import RECORD, plain, read_json
    from llama4spec.results.bench import BenchRecord

    starts: dict[int, list[float]] = {}
    sides: dict[tuple[int, str], list[tuple[int, float]]] = {}
    for path in sorted(Path(run_dir).glob("*/record.json")):
        m = BENCH_ID.match(path.parent.name)
        if not m:
            continue
        data = read_json(path, RECORD)
        if not isinstance(data, dict):
            raise UserError(f"{plain(str(path))}: not a llama4spec bench record (a JSON object); {RECORD.fix}")
        record = BenchRecord.from_dict(data, path.parent.name, str(path))
        runs = [x for x in record.samples("output_throughput") if x > 0]
        if m["side"]:
            sides.setdefault((int(m["start"]), m["side"]), []).extend((int(m["run"] or 0), x) for x in runs)
        elif runs:
            starts[int(m["start"])] = runs
    return starts, {k: [x for _, x in sorted(v)] for k, v in sides.items()}


def costs(status: Mapping[str, Any], runs: int) -> tuple[float, float]:
    """Seconds a server start took (the serve steps' mean) and seconds a counted run took (the bench
    steps' time over their counted runs, warm-ups included: what a run costs in a sweep)."""
    def seconds(kind: str) -> list[float]:
        return [float(s.get("seconds") or 0.0) for s in status.get("steps", [])
                if s.get("kind") == kind and s.get("status") == "done" and not s.get("resumed")]

    serve, bench = seconds("serve"), seconds("bench")
    return (sum(serve) / len(serve) if serve else 0.0), (sum(bench) / runs if runs else 0.0)


def _check(intervals: list[Interval], confidence: float, margin: float) -> AACheck:
    return AACheck(len(intervals), sum(iv.excludes_one() for iv in intervals), confidence,
                   sum(equivalent(iv, margin, confidence).equivalent for iv in intervals), margin)


def aa_check(starts: Mapping[int, list[float]], noise: Noise, confidence: float, margin: float) -> AACheck:
    """Each pair of starts as two settings of one start each, under the estimated components."""
    pairs = itertools.combinations(sorted(starts), 2)
    return _check([ratio_interval(starts[a], starts[b], noise, confidence) for a, b in pairs], confidence, margin)


def aa_blocks(blocks: list[list[float]], noise: Noise, confidence: float, margin: float) -> AACheck:
    """Back to back: each block's two servers compared (ratios b over a), under the estimated components."""
    return _check([block_interval([ratios], confidence, noise) for ratios in blocks], confidence, margin)


def measure(run_dir: Path, settings: Settings, fp: Fingerprint) -> Profile:
    """The profile of a finished calibration run; UserError when it measured too little to estimate."""
    from llama4spec.runbook.rundir import read_status

    starts, sides = read_runs(run_dir)
    status = read_status(run_dir) or {}
    if settings.design == "sequential":
        if len(starts) < 2 or sum(len(v) - 1 for v in starts.values()) < 1:
            raise UserError(f"{run_dir}: {len(starts)} server start(s) measured; the components need 2 or more "
                            "with 2 runs each: see the run's summary.md for what failed, then calibrate again")
        noise = estimate({"setting": list(starts.values())})
        start_s, run_s = costs(status, sum(len(v) for v in starts.values()))
        check = aa_check(starts, noise, settings.confidence, settings.margin)
    else:
        blocks = sorted({j for j, _ in sides if (j, "a") in sides and (j, "b") in sides})
        if len(blocks) < 2:
            raise UserError(f"{run_dir}: {len(blocks)} block(s) measured on both sides; the components need 2 or "
                            "more: see the run's summary.md for what failed, then calibrate again")
        every = {"setting": [sides[(j, s)] for j in blocks for s in "ab"]}
        ratios = [[b / a for a, b in zip(sides[(j, "a")], sides[(j, "b")])] for j in blocks]
        noise = estimate(every, paired=ratios)
        start_s, run_s = costs(status, sum(len(v) for v in every["setting"]))
        start_s, run_s = 2 * start_s, 2 * run_s  # a start pair, a run pair
        check = aa_blocks(ratios, noise, settings.confidence, settings.margin)
    aa = {"pairs": check.pairs, "declared": check.declared, "rate": check.rate,
          "expected": 1 - check.confidence, "confidence": check.confidence, "equivalent": check.equivalent,
          "margin": check.margin}
    return Profile(noise, start_s, run_s, fp, settings.design, settings.starts, settings.runs,
                      {"aa_check": aa})


def aa_of(profile: Profile) -> AACheck:
    raw = profile.extra.get("aa_check") or {}
    return AACheck(int(raw.get("pairs", 0)), int(raw.get("declared", 0)), float(raw.get("confidence", 0.95)),
                   int(raw.get("equivalent", 0)), float(raw.get("margin", 0.02)))
