"""Synthetic acceptance on vLLM's CPU build (``draft.synthetic_acceptance_length``; the CPU plugin
runs the rejection sampler's synthetic branch): one server of the imperfect pair at k=3 with the
acceptance length set to 2.5, whose rates vLLM resolves to [1, 0.5, 0] (unconditional per position),
benchmarked once. vLLM's own counters (the /metrics delta around the run) must show position 0
accepted at every draft and position 2 at none, exactly, whatever the draft proposed (the
imperfect draft alone accepts differently), and position 1 at a rate within 4.5 binomial standard
deviations of 0.5, so the mean acceptance length is the set 2.5 within the same bound."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tests.engine.conftest import serving
from tests.helpers import run_cli

LENGTH, K = 2.5, 3


def test_a_synthetic_servers_counters_match_the_set_length(tmp_path: Path, tiny_dir) -> None:
    overrides = ["draft=tiny_eagle_imperfect", f"lookahead={K}", f"draft.synthetic_acceptance_length={LENGTH}"]
    with serving(overrides, tmp_path / "server") as server:
        res = run_cli("bench", *overrides, "bench=random_tiny", "bench.num_prompts=16", "bench.output_len=32",
                      "bench.max_concurrency=4", "--url", server.url, "--out", str(tmp_path / "b"), timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    acc = json.loads((tmp_path / "b" / "record.json").read_text())["acceptance"]
    drafts, per_pos = acc["num_drafts"], acc["accepted_per_pos"]
    assert drafts > 50 and len(per_pos) == K
    assert per_pos[0] == drafts and per_pos[2] == 0
    sd = math.sqrt(0.25 / drafts)
    assert abs(per_pos[1] / drafts - 0.5) < 4.5 * sd, (per_pos, drafts)
    assert abs(acc["mean_acceptance_length"] - LENGTH) < 4.5 * sd
