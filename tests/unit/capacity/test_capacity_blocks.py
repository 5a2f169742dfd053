"""A capacity step in back-to-back blocks (``blocks: J``), without an engine: its plan (each setting
with a draft searched in J blocks beside a fresh server without speculation, on the two halves,
the searches' order crossed over), its report from simulated searches (a drift that moves both
servers of a block cancels in the block's gain), ``report`` rebuilding it, bad input, and the
verdicts on hand-made gains."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llama4spec.capacity import blocks
from llama4spec.runbook.plan import plan_file
from tests.helpers import REPO
from tests.recorded_runs import finished_capacity_run

RUNBOOK = REPO / "runbooks" / "tiny_cpu_capacity_blocks.yaml"
DRIFT = {1: 0.7, 2: 1.0, 3: 1.4, 4: 0.85}  # each block's servers both move by this (a between-start spread of +-40%)


def _capacities() -> dict[str, float]:
    """k=3 carries 1.3x, k=1 0.7x no speculation's 30 req/s in every block, times the block's drift."""
    out = {}
    for j, drift in DRIFT.items():
        for k, gain in ((1, 0.7), (3, 1.3)):
            out[f"capacity-none-for-tiny_eagle-k{k}-b{j}-search"] = 30.0 * drift
            out[f"capacity-tiny_eagle-k{k}-b{j}-search"] = 30.0 * drift * gain
    return out


@pytest.fixture(scope="module")
def blocks_run(tmp_path_factory) -> Path:
    return finished_capacity_run(tmp_path_factory.mktemp("blocks") / "run", _capacities(), runbook=RUNBOOK)


def test_each_setting_is_searched_in_blocks_beside_a_fresh_baseline(tmp_path: Path) -> None:
    plan = plan_file(RUNBOOK, lambda name: tmp_path, [])
    keys = plan.get("capacity").step.keys
    assert sorted(keys.points) == sorted(_capacities()) and len(keys.pairs) == 8
    for cand, base in keys.pairs.items():
        c, b = plan.get(cand), plan.get(base)
        server, base_server = plan.get(c.step.keys.server), plan.get(b.step.keys.server)
        assert server.step.keys.beside == base_server.id and base_server.composed.cfg.draft.method is None
        j = int(cand.rsplit("-b", 1)[1].removesuffix("-search"))
        assert base_server.step.keys.slot == (j + 1) % 2 and server.step.keys.slot == j % 2
        ids = [p.id for p in plan.steps]
        assert (ids.index(base) < ids.index(cand)) == (j % 2 == 1)  # the searches' order crossed over
        assert keys.names[cand] in ("EAGLE k=1", "EAGLE k=3") and keys.names[base] == "no speculation"
    assert keys.settings_record()["pairs"] == keys.pairs and keys.design_record()["design"] == "blocks"


def test_the_blocks_decide_gains_that_a_drift_between_starts_hides(blocks_run: Path) -> None:
    record = json.loads((blocks_run / "capacity" / "capacity.json").read_text())
    gains = {g["name"]: g for g in record["blocks"]["gains"]}
    k3, k1 = gains["EAGLE k=3"], gains["EAGLE k=1"]
    assert len(k3["blocks"]) == 4 and k3["ratio"] == pytest.approx(1.3, rel=0.1) and k3["low"] > 1
    assert k3["verdict"] == "more" and k1["verdict"] == "less" and k1["high"] < 1
    # the capacities themselves move by 2x between blocks; the gains do not
    caps = [s["rate"] for n, s in record["settings"].items() if n.startswith("no speculation")]
    assert max(caps) / min(caps) > 1.7
    assert record["headline"] == record["blocks"]["sentence"] and "over 4 back-to-back blocks" in record["headline"]
    assert "EAGLE k=3, block 2" in record["settings"] and record["between"]["sd"] == 0
    assert len(record["settings"]) == 16 and "no speculation beside EAGLE k=1, block 4" in record["settings"]
    text = (blocks_run / "capacity" / "report.md").read_text()
    assert "## Back-to-back blocks" in text and "| EAGLE k=3 |" in text and "| more |" in text


def test_report_rebuilds_the_blocks(cli, blocks_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(blocks_run, run)
    shutil.rmtree(run / "capacity")
    done = cli("report", str(run))
    assert done.returncode == 0, done.stderr
    assert json.loads((run / "capacity" / "capacity.json").read_text()) == \
        json.loads((blocks_run / "capacity" / "capacity.json").read_text())


@pytest.mark.parametrize("old,new,said", [
    ("blocks: 4", "blocks: 1", "'blocks' is 1, which measures no spread between blocks; give 2 or more"),
    ("blocks: 4", "blocks: 4\n    bands: [16, 64]", "'blocks' and 'bands' together are not offered"),
    ("draft: [none, tiny_eagle]", "draft: [tiny_eagle]", "blocks pair each setting with a draft with the one setting"),
])
def test_bad_blocks_are_one_line_exit_2(cli, tiny_dir, tmp_path: Path, old: str, new: str, said: str) -> None:
    path = tmp_path / "runbook.yaml"
    path.write_text(RUNBOOK.read_text().replace(old, new))
    done = cli("run", str(path), "--dry-run")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert said in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_a_gain_is_decided_where_its_blocks_interval_excludes_1() -> None:
    assert blocks.combine("a", [1.2, 1.25, 1.3]).verdict == "more"
    assert blocks.combine("a", [0.8, 0.82, 0.79]).verdict == "less"
    wide = blocks.combine("a", [0.7, 1.5, 1.2])
    assert wide.verdict == "undecided" and wide.low < 1 < wide.high
    one = blocks.combine("a", [1.3, None])
    assert one.ratio == pytest.approx(1.3) and one.low is None and one.verdict == "undecided"
    assert "no spread" in blocks.sentence(one, "none") and blocks.combine("a", []).ratio is None
