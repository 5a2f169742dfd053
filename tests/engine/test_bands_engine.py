"""Speculation by input length on a real server: the banded tiny set-up, end to end.

A banded sweep (``bands:`` of a prompt file) of the contrast pair at k=7 against no speculation at
concurrency 1, served from a copy of the whole tiny cache under another path, on a set of prompts
distinct from the shipped one (``tiny.bands``, offset 1: each prompt a word longer), in the set-up's
shortest band (no continuation inside the draft's wrong block: acceptance length 8.0) and its longest
(every continuation inside: 1.0). Each band's acceptance counters (vLLM's ``/metrics`` deltas of every
run) equal the greedy simulation's for that band's prompts, position by position; and the report
locates where speculation stops paying between the two bands, before the band whose drafts are all
rejected. Two server starts and 4 points of 3 to 5 short runs (24 prompts of 32 tokens) after a warm-up of 8
requests each (a server's first requests run slower).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llama4spec.tiny import bands, contrast
from tests import tiny_sim
from tests.helpers import free_port, run_cli, run_dir_of

pytestmark = pytest.mark.engine

K, OUTPUT, OFFSET = bands.MAX_LOOKAHEAD, contrast.MAX_OUTPUT, 1  # the widest contrast the set-up holds
SHORT, LONG = 0, 2  # the bands measured: none and all of their prompts continuing inside the block
MEASURED = [bands.TOKEN_BANDS[SHORT], bands.TOKEN_BANDS[LONG]]


@pytest.fixture(scope="module")
def banded(tmp_path_factory, tiny_dir) -> Path:
    tmp = tmp_path_factory.mktemp("bands")
    elsewhere = tmp / "elsewhere"  # the whole tiny cache, copied: every tiny config resolves there
    shutil.copytree(tiny_dir, elsewhere)
    prompts = tmp / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p, "category": c}) + "\n" for p, c in bands.prompt_items(OFFSET)))
    spans = ", ".join(f"[{low}, {high}]" for low, high in MEASURED)
    runbook = tmp / "banded.yaml"
    runbook.write_text(f"""
name: banded
env:
  VLLM_CPU_KVCACHE_SPACE: "1"
overrides: [target=tiny, memory=cpu, bench=tiny_bands, bench.dataset_path={prompts},
            bench.output_len={OUTPUT}, serve.port={free_port()}]
steps:
  - id: sweep
    kind: sweep
    matrix: {{draft: [none, tiny_eagle_contrast], lookahead: [{K}], bench.max_concurrency: [1]}}
    bands: [{spans}]
    repeats: auto
    min_repeats: 3
    max_repeats: 5
    warmup: 8
    extra_args: [--ignore-eos]
""")
    done = run_cli("run", str(runbook), "--runs-dir", str(tmp / "runs"), timeout=900,
                   env={"LLAMA4SPEC_TINY_DIR": str(elsewhere)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert str(elsewhere) in (run_dir_of(tmp / "runs") / "plan.json").read_text()  # served from the copy
    return run_dir_of(tmp / "runs")


def test_each_bands_acceptance_is_the_simulations_for_its_prompts(banded: Path) -> None:
    for i in (SHORT, LONG):
        (length, inside), (low, high) = bands.BANDS[i], bands.TOKEN_BANDS[i]
        (point,) = [d for d in banded.iterdir() if d.name.startswith("sweep-tiny_eagle_contrast")
                    and d.name.endswith(f"input_band-{low}-{high}")]
        record = json.loads((point / "record.json").read_text())
        runs = [r for r in record["runs"] if r.get("acceptance")]
        prompts = [p for p, _ in bands.band_items(length, inside, OFFSET)]
        one = tiny_sim.predict(prompts, OUTPUT, K, contrast.draft_next)  # every prompt once a run
        assert len(runs) >= 2
        for run in runs:
            got = run["acceptance"]
            assert (got["num_drafts"], got["accepted_per_pos"]) == (one.num_drafts, one.accepted_per_pos), (low, got)


def test_the_break_lies_before_the_band_whose_drafts_are_all_rejected(banded: Path) -> None:
    analysis = json.loads((banded / "sweep" / "sweep.json").read_text())
    labels = [b["label"] for b in analysis["input_bands"]["bands"]]
    assert labels == [f"{low}-{high} tokens" for low, high in MEASURED]
    (found,) = analysis["input_bands"]["breaks"]
    lengths = {c["input_band"]: next(r["acceptance_length"] for r in c["rows"]) for c in analysis["concurrency"]}
    assert found["after"] is not None and found["before"] is not None, found["sentence"]
    after, before = labels.index(found["after"]["label"]), labels.index(found["before"]["label"])
    assert before == after + 1 and found["paying"] == labels[:before]
    assert lengths[labels[-1]] == 1.0 and lengths[labels[0]] > lengths[labels[-1]]
    assert labels[-1] not in found["paying"] and found["routing"].startswith("concurrency 1: vLLM 0.32 has no lookahead")
    report = (banded / "sweep" / "report.md").read_text()
    assert found["sentence"] in report and "## input length" in report
