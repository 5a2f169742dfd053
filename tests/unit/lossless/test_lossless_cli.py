"""``llama4spec lossless``, the ``lossless`` step kind, its shipped runbooks, ``run --fail-on-lossless``
and ``regress`` on lossless records: planning, bad input and gates, no engine."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from llama4spec.lossless.check import LOSSY, PASS, Greedy, SampledTest
from llama4spec.lossless.record import LosslessRecord, load, worse
from llama4spec.lossless.run_engines import sampled_requests
from llama4spec.lossless.settings import Settings
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.render import plan_text
from llama4spec.tiny.paths import tiny_root
from tests.helpers import REPO

GOLDEN = REPO / "tests" / "golden"
RUNBOOKS = sorted((REPO / "runbooks").glob("*lossless*.yaml"))
assert len(RUNBOOKS) == 3, RUNBOOKS
RUN_DIR = Path("runs/RUNBOOK/TIMESTAMP")


@pytest.mark.parametrize("args, line", [
    (["--temperatures=-1,0"], "--temperatures: -1.0 is no temperature"),
    (["--temperatures=0,nan"], "--temperatures: nan is no temperature"),
    (["--temperatures", "0,hot"], "is not a list of numbers"),
    (["dataset.num_prompts=0"], "dataset.num_prompts=0: must be at least 1"),
    (["draft=none"], "draft=none: nothing to compare"),
    (["--samples", "0"], "--samples must be a whole number from 1"),
    (["--level", "0.9"], "--level must be a number above 0 up to 0.5"),
    (["--top-p", "0"], "--top-p must be a number above 0 up to 1"),
    (["--top-p", "1.5"], "--top-p must be a number above 0 up to 1"),
    (["--top-p", "nan"], "--top-p must be a number above 0 up to 1"),
    (["--top-k", "-2"], "--top-k must be a whole number from -1"),
    (["--top-k", "2.5"], "--top-k: invalid int value"),
    (["--min-p", "0.05"], "min_p: vLLM 0.32 ignores min_p (and logit_bias) when a draft is set"),
    (["--url", "ftp://x"], "url 'ftp://x': not a server URL"),
    (["--url", "http://u:p@127.0.0.1:8000"], "a server URL has no user, password"),
    (["generation.temperature=0.7"], "generation.temperature=0.7 is not used where offline.temperatures (lossless: "
                                     "--temperatures) sets the temperatures"),
])
def test_bad_input_is_one_line_and_exit_2(cli, args, line) -> None:
    result = cli("lossless", "target=tiny_spread", *args, "--dry-run")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and line in lines[0], result.stderr


def test_the_command_plans_one_lossless_step(cli) -> None:
    result = cli("lossless", "target=tiny_spread", "--temperatures", "0,0.8", "--samples", "16", "--dry-run")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "llama4spec lossless target=tiny_spread --temperatures=0,0.8 --samples=16 --level=0.01" in out
    assert "exact multinomial test" in out and "context-conditioned test" in out
    assert "joint level 0.01 over 3 tests (Bonferroni: 0.00333 each)" in out
    assert "lossless/lossless.json" in out


def test_the_doctor_sees_the_checks_temperatures(cli) -> None:
    plan = plan_file(REPO / "runbooks" / "tiny_cpu_lossless.yaml", lambda name: RUN_DIR)
    spread = plan.get("spread")
    assert spread.composed.cfg.offline.temperatures == [0.0, 0.6, 1.0]
    assert "offline.temperatures" not in " ".join(spread.argv)  # the command line gives them as --temperatures


@pytest.mark.parametrize("path", RUNBOOKS, ids=lambda p: p.name)
def test_every_lossless_runbook_plans_checks_with_a_draft(path: Path) -> None:
    assert path.read_text().splitlines()[0] == f"# llama4spec run runbooks/{path.name}"
    plan = plan_file(path, lambda name: RUN_DIR)
    assert plan.steps and all(p.kind == "lossless" for p in plan.steps)
    for p in plan.steps:
        assert p.composed.cfg.draft.method is not None and p.argv[:2] == ["llama4spec", "lossless"]
        assert p.artifacts["record"] == RUN_DIR / p.id / "lossless.json"


@pytest.mark.parametrize("name,build", [("tiny_cpu_lossless", "cpu"), ("llama4_scout_eagle_lossless", "gpu"),
                                        ("llama4_maverick_eagle3_lossless", "gpu")])
def test_dry_run_matches_golden(name: str, build: str, use_build) -> None:
    use_build(build)
    console = Console(record=True, width=100, file=io.StringIO())
    plan_text(console, plan_file(REPO / "runbooks" / f"{name}.yaml", lambda n: RUN_DIR))
    text = console.export_text().replace(str(tiny_root()), "<tiny>").replace(sys.executable, "<python>")
    assert text.replace(str(REPO) + "/", "") == (GOLDEN / f"runbook_{name}.dry_run.txt").read_text()


def test_run_fail_on_lossless_makes_every_check_a_gate() -> None:
    from llama4spec.runbook.steps.lossless import fail_on_lossy

    plan = plan_file(REPO / "runbooks" / "tiny_cpu_lossless.yaml", lambda name: RUN_DIR)
    assert not any(p.step.keys.fail for p in plan.steps)
    fail_on_lossy(plan)
    assert all(p.step.keys.fail for p in plan.steps)


def test_sampled_requests_have_seeds_of_their_own_after_the_greedy_ones() -> None:
    hot = sampled_requests(Settings(temperatures=(0.0, 0.6, 1.0), samples=5), seed=3, prompts=4)
    assert len(hot) == 10 and [r.prompt for r in hot[:5]] == [0, 1, 2, 3, 0]
    assert [r.seed for r in hot] == list(range(3 + 4, 3 + 14))  # greedy requests took seeds 3..6


# -- regress on lossless records -------------------------------------------------------------------
def _record(verdict: str, target: str = "tiny_spread", diverged: int = 0) -> LosslessRecord:
    from llama4spec.lossless.check import Divergence

    greedy = Greedy(4, [Divergence(i, 3, 0.01) for i in range(diverged)], [], 1.0, 0.005, [], PASS)
    lossy = verdict == LOSSY
    hot = SampledTest(0.8, "exact multinomial", 16, ["successor", "second", "other"],
                      [460, 5, 31] if lossy else [370, 126, 0], [0.7425, 0.2575, 9e-10], 90.0 if lossy else 0.3,
                      5e-5 if lossy else 0.878, 0.005, 0.07, verdict, draws=20000)
    return LosslessRecord("2026-01-01T00:00:00+0000", {"vllm": "0.32.0"}, {}, [], {}, target, "tiny_eagle_spread", 3,
                          {"name": "builtin"}, Settings(temperatures=(0.0, 0.8), samples=16), 2, greedy, [hot])


def _run_dir(where: Path, record: LosslessRecord) -> Path:
    where.mkdir(parents=True)
    (where / "status.json").write_text(json.dumps({"runbook": "lossless", "status": "done", "steps": [
        {"id": "check", "kind": "lossless", "status": "done", "result": record.figures()}]}))
    (where / "plan.json").write_text(json.dumps([{"id": "check", "kind": "lossless", "needs": [], "inputs": {}}]))
    (where / "check").mkdir()
    record.write(where / "check" / "lossless.json")
    return where


def test_a_record_reads_back_and_says_what_got_worse(tmp_path) -> None:
    good, bad = _record(PASS), _record(LOSSY, diverged=1)
    assert bad.verdict == LOSSY and good.verdict == PASS
    good.write(tmp_path / "a.json")
    bad.write(tmp_path / "b.json")
    a, b = load(tmp_path / "a.json"), load(tmp_path / "b.json")
    lines = worse(a, b)
    assert lines[0] == "lossless verdict: pass -> lossy"
    assert "temperature 0: 0 of 4 requests diverged -> 1 of 4" in lines
    assert any(line.startswith("temperature 0.8: exact multinomial p = 0.878 -> 5e-05") for line in lines)
    assert worse(b, a) == [] and worse(a, a) == []


def test_regress_reports_a_lossless_record_that_got_worse(cli, tmp_path) -> None:
    old = _run_dir(tmp_path / "old", _record(PASS))
    new = _run_dir(tmp_path / "new", _record(LOSSY))
    plain = cli("regress", str(old), str(new))
    assert plain.returncode == 0 and "lossless check: pass -> lossy" in plain.stdout, plain.stdout + plain.stderr
    gated = cli("regress", str(old), str(new), "--fail-on-lossless", "--json")
    assert gated.returncode == 1, gated.stdout + gated.stderr
    data = json.loads(gated.stdout)
    assert data["lossless"][0]["old"] == PASS and data["lossless"][0]["new"] == LOSSY
    assert "lossless check: lossless verdict: pass -> lossy" in data["failing"]
    assert cli("regress", str(new), str(old), "--fail-on-lossless").returncode == 0  # it got better


def test_regress_refuses_records_of_another_target(cli, tmp_path) -> None:
    old = _run_dir(tmp_path / "old", _record(PASS))
    other = _run_dir(tmp_path / "other", _record(PASS, target="tiny"))
    result = cli("regress", str(old), str(other))
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "checked different targets" in lines[0], result.stderr


def test_a_hostile_lossless_record_is_one_line(cli, tmp_path) -> None:
    old = _run_dir(tmp_path / "old", _record(PASS))
    new = _run_dir(tmp_path / "new", _record(PASS))
    (new / "check" / "lossless.json").write_text(json.dumps({"kind": "lossless", "verdict": "fine", "target": 3}))
    result = cli("regress", str(old), str(new))
    assert result.returncode == 2 and "not a lossless record this tool wrote" in result.stderr, result.stderr


def test_the_verdicts_with_their_power_lines_reach_the_summary_and_the_page(tmp_path) -> None:
    """A lossy check: summary.md's Verdicts and the report page's carry each test's verdict and power
    line (before, the page said only 'run done')."""
    from llama4spec.analysis.page import verdicts
    from llama4spec.runbook import write_page
    from llama4spec.runbook.rundir import summary_markdown

    run_dir = _run_dir(tmp_path / "run", _record(LOSSY))
    summary = summary_markdown(json.loads((run_dir / "status.json").read_text()))
    assert "## Verdicts" in summary and "- check: lossless: lossy: a test rejected losslessness" in summary
    assert "T=0.8, cross-check, exact multinomial: lossy (p = 5e-05 at 0.005); a shift of P(successor) by 0.07 " \
           "is found with 80% power (496 tokens)" in summary
    said = verdicts(write_page.gather(run_dir))
    assert "check: lossless: lossy: a test rejected losslessness (joint level 0.01)" in said
    assert any("T=0: pass (0 of 4 diverged" in line for line in said), said
    (run_dir / "check" / "lossless.json").write_text('{"kind": "lossless", "verdict": "maybe"}')
    said = verdicts(write_page.gather(run_dir))
    assert any(line.startswith("check: lossless record unreadable:") for line in said), said
