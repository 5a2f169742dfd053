"""The plain comparison says what it rests on: one run a side is too little for an interval (and it
says how to get one); with repeats it is the sweep's comparison, with the same noise estimate."""

from __future__ import annotations

import json

from llama4spec.stats.noise import prior
from llama4spec.analysis.pair_headline import headline
from tests.helpers import REPO

DATA = REPO / "tests" / "data" / "serving"
CPU = prior(0.13, 0.165, "hardware prior: test", 6, 72)


def test_one_run_a_side_says_it_has_no_interval_and_how_to_get_one() -> None:
    line = headline([215.92], [441.37], CPU)
    assert line.startswith("output throughput 441.37 against 215.92: 2.04x from 1 run against 1")
    assert "too little data for an interval" in line and "llama4spec calibrate" in line and "repeats" in line


def test_repeats_use_the_noise_estimate_and_the_sweeps_verdicts() -> None:
    line = headline([215.0, 217.0, 216.0], [441.0, 443.0, 440.0], CPU)
    assert "(medians of 3 and 3 runs): 2.04x [" in line and "hardware prior: test" in line
    assert "between-start sd 0.130 (6.0 df" in line and ("faster" in line or "undecided" in line)
    quiet = headline([215.0, 217.0, 216.0], [441.0, 443.0, 440.0], prior(0.01, 0.01, "profile x", 20, 60))
    assert ", faster (" in quiet
    same = headline([215.0, 216.0, 215.5, 215.8], [215.2, 215.9, 215.4, 215.7], prior(0.001, 0.01, "profile x", 20, 60))
    assert "equivalent within +-2%" in same


def test_the_command_prints_the_headline_and_records_it(cli) -> None:
    args = (DATA / "scout_baseline.vllm.json", DATA / "scout_eagle.record.json")
    done = cli("compare", *args)
    assert done.returncode == 0 and "1.57x from 1 run against 1" in done.stdout.splitlines()[0]
    doc = json.loads(cli("compare", *args, "--json").stdout)
    assert "too little data for an interval" in doc["headline"]
