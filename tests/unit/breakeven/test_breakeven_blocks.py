"""A break-even map in back-to-back blocks (``blocks: J``): its plan (every server of the map started
J times beside a fresh server without speculation, pairs of runs alternating, halves swapped block
by block, rounds in a seeded order), bad input, and the map from block ratios: a drift that moves
both servers of a block cancels, so the self-check can disagree where one start a server could not."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from llama4spec.breakeven import blocks
from llama4spec.breakeven.map_fit import Runs, build
from llama4spec.runbook.plan import plan_file
from llama4spec.stats.noise import prior
from tests.helpers import REPO

RUNBOOK = REPO / "runbooks" / "tiny_cpu_breakeven_blocks.yaml"
NAMES = ["k3-L1", "k3-L2", "k3-L3", "k3-L4", "k3-draft"]


def test_each_server_of_the_map_is_started_in_blocks_beside_a_fresh_baseline(tmp_path: Path) -> None:
    plan = plan_file(RUNBOOK, lambda name: tmp_path, [])
    serves = [p for p in plan.steps if p.kind == "serve"]
    assert len(serves) == 2 * 4 * len(NAMES)
    for j in (1, 2, 3, 4):  # each round visits every server of the map once
        mine = [p for p in serves if p.id.endswith(f"-b{j}") and "-none-" not in p.id]
        assert sorted(p.id.removeprefix("breakeven-").removesuffix(f"-b{j}") for p in mine) == sorted(NAMES)
        for p in mine:
            base = plan.get(p.step.keys.beside)
            assert base.id == p.id.replace("breakeven-", "breakeven-none-") and base.composed.cfg.draft.method is None
            assert {p.step.keys.slot, base.step.keys.slot} == {0, 1} and base.step.keys.slot == (j + 1) % 2
            assert p.composed.cfg.serve.port == base.composed.cfg.serve.port + 1
    rounds = [[p.id.rsplit("-b", 1)[0] for p in serves if p.id.endswith(f"-b{j}") and "-none-" not in p.id]
              for j in (1, 2, 3, 4)]
    assert len({tuple(r) for r in rounds}) > 1  # a seeded random order, not the grid's
    keys = plan.get("breakeven").step.keys
    pairs = [plan.get(pid) for pid in keys.points if plan.get(pid).step.keys.pair_with]
    assert len(pairs) == 4 * len(NAMES) * 2  # every candidate point of every block at both concurrencies
    for p in pairs:
        other = plan.get(p.step.keys.pair_with)
        assert other.step.keys.paired and other.step.keys.start == p.step.keys.start and p.step.keys.block
        assert plan.get(other.step.keys.server).id == plan.get(p.step.keys.server).step.keys.beside
    assert keys.design_record()["design"] == "blocks" and keys.prior is None


@pytest.mark.parametrize("old,new,said", [
    ("blocks: 4", "blocks: 1", "'blocks' is 1, which measures no spread between blocks; give 2 or more"),
    ("blocks: 4", "blocks: 4\n    noise: x.json", "with 'blocks' the map's noise is the blocks' own spread; drop 'noise'"),
    ("blocks: 4", "blocks: 21", "'blocks' must be"),
])
def test_bad_blocks_are_one_line_exit_2(cli, tiny_dir, tmp_path: Path, old: str, new: str, said: str) -> None:
    path = tmp_path / "runbook.yaml"
    path.write_text(RUNBOOK.read_text().replace(old, new))
    done = cli("run", str(path), "--dry-run")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert said in done.stderr and done.stderr.count("\n") == 1, done.stderr


def _measured(draft_factor: float, blocks_n: int = 4, seed: int = 3):
    """Runs of a map in blocks, each block's two servers moved together by a drift of sd 10% (the
    between-start spread that a single start leaves to a prior), each run by 1%: (base, synthetic,
    real, paired) as ``report.runs_of`` gives them. The draft sits at acceptance 2.5, where the
    true curve gives 1.0 + 0.25 x 1.5 = 1.375, times ``draft_factor``."""
    rng = random.Random(seed)
    base, synthetic, real, paired = [], [], [], {}
    for j in range(blocks_n):
        for length in (1.0, 2.0, 3.0, 4.0, None):
            drift = math.exp(rng.gauss(0, 0.10))
            speedup = 0.75 + 0.25 * (length or 2.5)
            if length is None:
                speedup *= draft_factor
            bl, cl = f"none-{length}-b{j}", f"k3-{length}-b{j}"
            base.append(Runs(4, tuple(100 * drift * math.exp(rng.gauss(0, 0.01)) for _ in range(3)), label=bl))
            runs = Runs(4, tuple(100 * speedup * drift * math.exp(rng.gauss(0, 0.01)) for _ in range(3)), 3, length,
                        (length or 2.5,) * 3, cl)
            (synthetic if length else real).append(runs)
            paired[cl] = bl
    return base, synthetic, real, paired


def test_the_blocks_spread_lets_the_self_check_see_a_draft_that_misses_the_map() -> None:
    base, synthetic, real, paired = _measured(0.8)
    b, s, r, notes = blocks.as_ratios(paired, base, synthetic, real)
    assert not notes and [x.label for x in b] == ["no speculation (ratio 1), c=4"] and len(s) == 4
    m = build(b, s, r, noise=blocks.noise(4))
    placed = m.curves[0].placements[0]
    assert placed.predicted.value == pytest.approx(1.375, rel=0.03)
    assert placed.measured.value == pytest.approx(1.1, rel=0.03) and placed.agrees is False
    assert placed.measured.high / placed.measured.low < 1.1  # the drift cancels within each block
    # the first block's runs as one start a server, against the prior's between-start sd: the self-check's
    # interval is several times as wide (the drift is no longer paired away)
    flat = build([x for x in base if x.label.endswith("-b0")][:1], [x for x in synthetic if x.label.endswith("-b0")],
                 [x for x in real if x.label.endswith("-b0")], noise=prior(0.10, 0.01, "test"))
    wide, narrow = flat.curves[0].placements[0].difference, placed.difference
    assert math.log(wide.high / wide.low) > 3 * math.log(narrow.high / narrow.low)


def test_a_draft_on_the_map_agrees_in_blocks() -> None:
    b, s, r, _ = blocks.as_ratios(*_rearranged(_measured(1.0)))
    placed = build(b, s, r, noise=blocks.noise(4)).curves[0].placements[0]
    assert placed.agrees is True and placed.difference.high / placed.difference.low < 1.15


def _rearranged(found):
    base, synthetic, real, paired = found
    return paired, base, synthetic, real


def test_a_block_without_its_pair_and_a_point_with_one_block_are_left_out_and_named() -> None:
    base, synthetic, real, paired = _measured(1.0, blocks_n=2)
    base = [x for x in base if x.label != "none-1.0-b1"]  # a block's baseline never counted
    b, s, r, notes = blocks.as_ratios(paired, base, synthetic, real)
    assert [x.set_length for x in s] == [2.0, 3.0, 4.0]
    assert notes == ["k3-1.0-b1: its block has no counted pair; left out", "k3-1.0-b0: one counted block, no spread; "
                     "left out"]
    assert blocks.block_ratio([2.0, 8.0], [4.0]) == pytest.approx(1.0) and blocks.block_ratio([], [1.0]) is None


def test_a_blocks_two_servers_start_together(tmp_path: Path) -> None:
    from llama4spec.runbook.steps.serve import _partner

    plan = plan_file(RUNBOOK, lambda name: tmp_path, [])

    class Run:  # what the serve step reads of a run: its plan
        pass

    run = Run()
    run.plan = plan
    for p in plan.steps:
        if p.kind != "serve":
            continue
        partner = _partner(run, p)
        if "-none-" in p.id:  # no speculation's server starts first, the candidate's together with it
            assert partner is not None and partner.step.keys.beside == p.id
        else:
            assert partner is None


def test_the_command_line_measures_a_map_in_blocks_and_refuses_one_block(cli, tiny_dir) -> None:
    tiny = ["draft=tiny_eagle_imperfect", "target=tiny", "memory=cpu", "bench=random_tiny"]
    done = cli("breakeven", *tiny, "--lookaheads", "3", "--concurrencies", "4", "--blocks", "2", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "back-to-back blocks: each server started 2 times beside a fresh server" in done.stdout
    assert "breakeven-k3-L4-b2" in done.stdout and "breakeven-none-k3-draft-b2" in done.stdout
    done = cli("breakeven", *tiny, "--lookaheads", "3", "--concurrencies", "4", "--blocks", "1", "--dry-run")
    assert done.returncode == 2 and "--blocks is 1, which measures no spread" in done.stderr and "Traceback" not in done.stderr


def test_a_generated_step_id_already_taken_is_one_problem_and_nothing_is_taken(tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load(RUNBOOK.read_text())
    data["steps"].insert(0, {"id": "breakeven-k3-L2-b3-c4", "kind": "serve", "overrides": ["draft=none"]})
    path = tmp_path / "clash.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    from llama4spec.errors import UserError

    with pytest.raises(UserError) as err:
        plan_file(path, lambda name: tmp_path, [])
    said = [p for p in err.value.problems if "already used" in p]
    assert said == [f"{path}: step 'breakeven': the generated step id 'breakeven-k3-L2-b3-c4' is already used by "
                    f"another step; rename the breakeven step or that step"]
