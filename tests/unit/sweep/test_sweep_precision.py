"""A sweep's ``precision`` key (the relative half-width wanted): refused in one line when it is no
half-width; in the dry run, the server starts and runs a setting needs to reach it (the runs a start
from Kalibera and Jones' rule where a profile gives the costs), what they cost in time, and whether
``max_repeats`` caps them. Without the key the dry run says what it said before."""

from __future__ import annotations

from pathlib import Path

import pytest

from llama4spec.stats.design import _duration, design_lines, runs_per_start, starts_for
from llama4spec.stats.noise import prior
from llama4spec.stats.profile import read_profile
from llama4spec.sweep.kind import Keys
from llama4spec.sweep.planned import SweepPlan
from tests.helpers import scout_blocks_text
from tests.unit.sweep.test_sweep_noise import FIXTURES, _dry, _profile


def _lines(done) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [x.strip() for x in done.stdout.splitlines()]


@pytest.mark.parametrize("value", ["0", "-0.05", "1.5", ".nan", "'tight'"])
def test_a_precision_that_is_no_half_width_is_one_line_exit_2_and_nothing_starts(cli, tmp_path, value):
    done = _dry(cli, tmp_path, f"precision: {value}")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "step 'sweep': precision: " in done.stderr
    assert "is no relative half-width; give a number between 0 and 1 (0.05: the ratio within +-5%)" in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.json"))


def test_with_a_profile_the_dry_run_gives_the_starts_runs_and_time_the_precision_needs(cli, tmp_path):
    path = _profile(tmp_path)  # between sd 0.03, within 0.05; a start 40 s, a run 8 s
    noise = read_profile(path).noise
    runs = runs_per_start(noise, 40.0, 8.0).runs
    need = starts_for(noise, 0.04, runs)
    assert need.reached and need.starts >= 2
    total, seconds = need.starts * runs, need.starts * (40.0 + runs * 8.0)
    out = _lines(_dry(cli, tmp_path, f"noise: {path}\nprecision: 0.04\nrepeats: auto\nmax_repeats: {total}"))
    assert any(x.endswith(f"{need.starts} starts of {runs} runs a setting reach +-4% at 95%") for x in out), out
    said = [x for x in out if x.startswith("precision:")]
    assert said == [f"precision: +-4% needs {need.starts} server starts of {runs} runs a setting ({total} runs), "
                    f"{_duration(seconds)} a setting at 40 s a start and 8 s a run"]
    assert not any(x.startswith("max_repeats") for x in out)  # max_repeats reaches the design's runs
    capped = _lines(_dry(cli, tmp_path, f"noise: {path}\nprecision: 0.04\nrepeats: auto\nmax_repeats: {total - 1}"))
    assert [x for x in capped if x.startswith("max_repeats")] == [
        f"max_repeats ({total - 1}) caps a point at {total - 1} runs over all its starts, below the {total} of this "
        f"design: the sweep stops short of +-4% (raise max_repeats, or ask for a coarser precision)"]
    fixed = _lines(_dry(cli, tmp_path, f"noise: {path}\nprecision: 0.04\nrepeats: 2"))
    assert not any(x.startswith("max_repeats") for x in fixed)  # no repeats: auto rule, no cap to speak of
    assert f"the sweep starts each setting's server once, fewer than the {need.starts} starts of this design " \
           f"(starts: N sets it)" in fixed
    enough = _lines(_dry(cli, tmp_path, f"noise: {path}\nprecision: 0.04\nrepeats: 2\nstarts: {need.starts}"))
    assert not any(x.startswith("the sweep starts") for x in enough) and any(x.startswith("precision:") for x in enough)


def test_without_costs_the_time_is_said_to_be_unknown_and_out_of_reach_is_said(cli, tmp_path):
    out = _lines(_dry(cli, tmp_path, "precision: 0.3"))  # the CPU hardware prior: no costs recorded
    said = next(x for x in out if x.startswith("precision:"))
    assert "+-30% needs" in said and "its time is not known without a profile's costs" in said
    out = _lines(_dry(cli, tmp_path, "precision: 0.01"))
    assert any(x.startswith("precision: +-1% is out of reach on this noise") for x in out), out


def test_without_the_key_the_dry_run_is_unchanged(cli, tmp_path):
    path = _profile(tmp_path)
    out = _lines(_dry(cli, tmp_path, f"noise: {path}"))
    assert any(x.endswith("runs a setting reach +-5% at 95%") for x in out)
    assert not any(x.startswith(("precision:", "max_repeats")) for x in out)


def test_a_gpu_sweep_without_a_profile_does_not_plan_the_precision(cli, tmp_path):
    text = scout_blocks_text()
    runbook = tmp_path / "scout.yaml"
    runbook.write_text(text.replace("    repeats: auto\n", "    repeats: auto\n    precision: 0.05\n", 1))
    out = _lines(cli("run", runbook, "--dry-run", "--runs-dir", tmp_path / "runs"))
    assert "precision: +-5% is not planned: the noise above is provisional" in out


def test_the_design_record_carries_the_precision_asked_for():
    assert "precision" not in SweepPlan().design_record(Keys())
    assert SweepPlan().design_record(Keys(precision=0.05))["precision"] == 0.05


def test_design_lines_state_five_percent_and_nothing_more_without_a_precision():
    noise = prior(0.03, 0.05, "x", between_df=5, within_df=18)
    plain = design_lines(noise, (40.0, 8.0), (2, 10))
    assert plain[-1].endswith("a setting reach +-5% at 95%") and len(plain) == 2
    asked = design_lines(noise, (40.0, 8.0), (2, 10), precision=0.05, max_repeats=2)
    assert asked[:2] == plain and asked[2].startswith("precision: +-5% needs") and asked[3].startswith("max_repeats (2)")
    assert [_duration(s) for s in (45, 750, 11520)] == ["45 s", "12.5 min", "3.2 h"]


def test_the_scout_sweep_with_the_h100_profile_prints_what_docs_noise_md_shows(cli, tmp_path):
    """docs/noise.md quotes these two lines: the fixture profile (a start 420 s, a run 75 s; between
    0.02, within 0.04) gives 5 runs a start and 4 starts, 4 x (420 + 5 x 75) s = 53 min a setting."""
    (tmp_path / "h100.json").write_text((FIXTURES / "h100_scout_tp4.json").read_text())
    text = scout_blocks_text()
    runbook = tmp_path / "scout.yaml"
    runbook.write_text(text.replace("    repeats: auto\n", "    repeats: auto\n    design: sequential\n    noise: h100.json\n"
                                                       "    precision: 0.05\n", 1))
    out = _lines(cli("run", runbook, "--dry-run", "--runs-dir", tmp_path / "runs"))
    docs = Path("docs/noise.md").read_text()
    shown = [x for x in out if x.startswith(("precision:", "max_repeats", "the sweep starts"))]
    assert len(shown) == 3 and all(f"\n{x}\n" in docs for x in shown), shown
    assert shown[0].startswith("precision: +-5% needs 4 server starts of 5 runs a setting (20 runs), 53.0 min")
