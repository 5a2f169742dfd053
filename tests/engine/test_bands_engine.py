"""Speculation by input length on a real server: the banded tiny set-up, end to end.

A banded sweep (``bands:`` of a prompt file) of the contrast pair at k=7 against no speculation at
concurrency 1, served from a copy of the whole tiny cache under another path, on a set of prompts
distinct from the shipped one (``tiny.bands``, offset 1: each prompt a word longer), in the set-up's
shortest band (no continuation inside the draft's wrong block: acceptance length 8.0) and its longest
(every continuation inside: 1.0). Each band's acceptance counters (vLLM's ``/metrics`` deltas of every
run) equal the greedy simulation's for that band's prompts, position by position; and the report
says where speculation stops paying: the long band, whose drafts are all rejected, declared slower,
and the break between the two bands where the short one is declared faster. Two server starts and 4
points of 3 or 4 short runs (12 prompts of 32 tokens) after a warm-up of 8 requests each (a server's
first requests run slower).
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
PROMPTS = 12  # a run's prompts, of the band's 24
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
            bench.output_len={OUTPUT}, bench.num_prompts={PROMPTS}, serve.port={free_port()}]
steps:
  - id: sweep
    kind: sweep
    matrix: {{draft: [none, tiny_eagle_contrast], lookahead: [{K}], bench.max_concurrency: [1]}}
    bands: [{spans}]
    repeats: auto
    min_repeats: 3
    max_repeats: 4
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
        items = bands.band_items(length, inside, OFFSET)
        assert len({c for _, c in items}) == 1  # every prompt of the band counts alike: any PROMPTS of them
        one = tiny_sim.predict([p for p, _ in items][:PROMPTS], OUTPUT, K, contrast.draft_next)
        assert len(runs) >= 3
        for run in runs:
            got = run["acceptance"]
            assert (got["num_drafts"], got["accepted_per_pos"]) == (one.num_drafts, one.accepted_per_pos), (low, got)


def test_the_break_lies_before_the_band_whose_drafts_are_all_rejected(banded: Path) -> None:
    """The band whose drafts are all rejected is declared slower (0.4x here, robust to a loaded machine);
    where the short band is declared faster, the break lies between the two, else the report says
    speculation pays in no band (on 2 cores shared with other work the short band's 1.3x-2.6x has
    been left undecided)."""
    analysis = json.loads((banded / "sweep" / "sweep.json").read_text())
    labels = [b["label"] for b in analysis["input_bands"]["bands"]]
    assert labels == [f"{low}-{high} tokens" for low, high in MEASURED]
    (found,) = analysis["input_bands"]["breaks"]
    at = {c["input_band"]: c for c in analysis["concurrency"]}
    assert [r["acceptance_length"] for r in at[labels[-1]]["rows"]] == [1.0]
    assert at[labels[-1]]["speculation"] == "slower" and found["slower"] == [labels[-1]]
    short = at[labels[0]]["speculation"]
    assert [r["acceptance_length"] for r in at[labels[0]]["rows"]] == [K + 1.0] and short in ("faster", "undecided")
    if short == "faster":
        assert found["paying"] == labels[:1] and (found["after"]["label"], found["before"]["label"]) == tuple(labels)
        assert found["routing"].startswith("concurrency 1: vLLM 0.32 has no lookahead per context length")
        assert f"route prompts longer than {MEASURED[0][1]} tokens to a server without speculation" in found["routing"]
    else:
        assert found["paying"] == [] and found["after"] is None and found["routing"] is None
        assert found["sentence"] == f"concurrency 1: speculation pays in no band measured ({', '.join(labels)})"
    report = (banded / "sweep" / "report.md").read_text()
    assert found["sentence"] in report and "## input length" in report
