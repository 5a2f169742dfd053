"""The calibration as a runbook (pure): serve / bench / stop per start, or per start pair."""

from __future__ import annotations

import re
from typing import Any

from llama4spec.calibrate.settings import Settings

NAME = "calibrate"
# bench step ids: s<start>-r<run> alone (sequential: s<start>), with a side a|b back to back
BENCH_ID = re.compile(r"^s(?P<start>\d+)(?P<side>[ab])?(?:-r(?P<run>\d+))?$")


def runbook(settings: Settings, overrides: list[str]) -> dict[str, Any]:
    """The runbook data: sequential, each start serve / one bench of ``runs`` runs / stop; back to
    back, each block starts two servers of the setting (ports p and p + 1), alternates single
    runs a, b, a, b ... and stops both."""
    s = settings
    steps: list[dict[str, Any]] = []
    for j in range(1, s.starts + 1):
        if s.design == "sequential":
            server = f"serve-s{j}"
            steps += [{"id": server, "kind": "serve", "overrides": [f"serve.port={s.port}"]},
                      {"id": f"s{j}", "kind": "bench", "server": server, "repeats": s.runs, "warmup": s.warmup,
                       "extra_args": ["--ignore-eos"]},
                      {"id": f"{server}-stop", "kind": "stop", "server": server}]
            continue
        servers = {side: f"serve-s{j}{side}" for side in "ab"}
        steps += [{"id": servers[side], "kind": "serve", "overrides": [f"serve.port={s.port + i}"]}
                  for i, side in enumerate("ab")]
        for r in range(1, s.runs + 1):
            order = "ab" if (j + r) % 2 == 0 else "ba"  # alternating which side goes first
            steps += [{"id": f"s{j}{side}-r{r}", "kind": "bench", "server": servers[side], "repeats": 1,
                       "warmup": s.warmup if r == 1 else 0, "extra_args": ["--ignore-eos"]} for side in order]
        steps += [{"id": f"{servers[side]}-stop", "kind": "stop", "server": servers[side]} for side in "ab"]
    return {"name": NAME,
            "description": (f"Noise calibration: one setting started {s.starts} times ({s.design.replace('_', ' ')}), "
                            f"{s.runs} counted runs a start"),
            "overrides": list(overrides), "steps": steps}


def describe(settings: Settings) -> str:
    """The design in one sentence, for the dry run."""
    s = settings
    if s.design == "sequential":
        return (f"{s.starts} server starts one after another, {s.runs} counted runs each after {s.warmup} warm-up "
                f"requests: the between-start spread on {s.starts - 1} df, the within-start on "
                f"{s.starts * (s.runs - 1)} df")
    return (f"{s.starts} blocks of two servers started together, {s.runs} runs each side in turn: the paired "
            f"within-start spread on {s.starts * (s.runs - 1)} df, the between-start on about {s.starts} df")
