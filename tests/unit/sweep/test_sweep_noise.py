"""The noise a sweep's comparisons start from, at plan time: the hardware config's prior, a profile
of this machine (``noise: PATH``), or a provisional word on a GPU; a profile that cannot be used is
one line, exit 2, nothing started; the dry run prints what the sweep will use."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from llama4spec.stats.design import block_half_width, half_width, runs_per_block, runs_per_start
from llama4spec.stats.noise import Component, Noise, prior
from llama4spec.stats.profile import Profile, profile_json, read_profile
from llama4spec.stats.tdist import t_quantile
from tests.helpers import scout_blocks_text

SWEEP = """name: s
overrides: [target=tiny, memory=cpu, bench=random_tiny, serve.port=8741]
steps:
  - id: sweep
    kind: sweep
{extra}    matrix:
      draft: [none, tiny_eagle]
      lookahead: [1]
"""


def _runbook(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(SWEEP.format(extra="".join(f"    {line}\n" for line in extra.splitlines())))
    return path


def _profile(tmp_path: Path, edit=None, **fingerprint) -> Path:
    from llama4spec.config.compose import compose_config
    from llama4spec.runbook.noise_prior import this_machine

    fp = this_machine(compose_config(["target=tiny", "memory=cpu", "bench=random_tiny"]).cfg)
    profile = Profile(prior(0.03, 0.05, "x", between_df=5, within_df=18), 40.0, 8.0, fp, "sequential", 6, 4)
    data = profile_json(profile)
    data["fingerprint"].update(fingerprint)
    if edit:
        edit(data)
    path = tmp_path / "noise.json"
    path.write_text(json.dumps(data))
    return path


def _dry(cli, tmp_path: Path, extra: str = ""):
    return cli("run", _runbook(tmp_path, extra), "--dry-run", "--runs-dir", tmp_path / "runs")


def test_the_dry_run_prints_the_hardware_prior_it_will_use(cli, tmp_path):
    done = _dry(cli, tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "noise:" in x)
    assert "between-start sd 0.130 (6.0 df)" in line and "hardware prior" in line
    assert "within +-2% of each other are declared equivalent" in done.stdout


def test_a_profile_of_this_machine_is_the_prior(cli, tmp_path):
    path = _profile(tmp_path)
    done = _dry(cli, tmp_path, f"noise: {path}")
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "noise:" in x)
    assert "between-start sd 0.030 (5.0 df)" in line and f"profile {path}" in line


def _set(key, value):
    def edit(data):
        data["between"][key] = value
    return edit


@pytest.mark.parametrize("edit, fingerprint, said", [
    (None, {"vllm_version": "0.1.0"}, "measured with vllm version '0.1.0'"),
    (None, {"device": "another CPU"}, "measured with device 'another CPU'"),
    (_set("sd", -0.1), {}, "'between.sd' is -0.1"),
    (_set("sd", float("nan")), {}, "'between.sd' is nan"),
    (_set("df", -1), {}, "'between.df' is -1"),
])
def test_a_profile_that_cannot_be_used_is_one_line_and_exit_2(cli, tmp_path, edit, fingerprint, said):
    path = _profile(tmp_path, edit, **fingerprint)
    done = _dry(cli, tmp_path, f"noise: {path}")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.json"))


def test_a_truncated_or_missing_profile_is_one_line(cli, tmp_path):
    path = _profile(tmp_path)
    path.write_text(path.read_text()[:40])
    done = _dry(cli, tmp_path, f"noise: {path}")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "noise" in done.stderr, done.stderr
    done = _dry(cli, tmp_path, f"noise: {tmp_path / 'absent.json'}")
    assert done.returncode == 2 and "is not a file" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_negative_margin_is_refused_in_one_line(cli, tmp_path):
    done = _dry(cli, tmp_path, "margin: -0.01")
    assert done.returncode == 2 and "margin: -0.01 is no equivalence margin" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_gpu_sweep_without_a_profile_says_it_is_provisional_and_how_to_calibrate(cli, tmp_path):
    done = cli("run", "runbooks/llama4_scout_eagle_sweep.yaml", "--dry-run", "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "noise:" in x)
    assert "provisional" in line and "llama4spec calibrate" in line and "noise: PATH" in line


def test_the_sweep_command_takes_a_profile(cli, tmp_path):
    path = _profile(tmp_path)
    args = ("sweep", "lookahead=1", "draft=none,tiny_eagle", "target=tiny", "memory=cpu", "bench=random_tiny",
            "--dry-run", "--runs-dir", tmp_path / "runs")
    done = cli(*args, "--noise", path)
    assert done.returncode == 0, done.stderr
    assert f"profile {path}" in next(x for x in done.stdout.splitlines() if "noise:" in x)
    done = cli(*args, "--noise", _profile(tmp_path / "other" if (tmp_path / "other").mkdir() is None else tmp_path,
                                           vllm_build="cuda 12.8"))
    assert done.returncode == 2 and "measured with vllm build 'cuda 12.8'" in done.stderr, done.stderr


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "noise"


def test_the_scout_sweep_planned_here_with_a_gpu_profile_prints_its_design_and_precision(cli, tmp_path):
    """A quiet H100 node's profile (a fixture of made-up figures: between 0.02, within 0.04): the
    Scout sweep planned on this GPU-less machine takes it (its device and build not compared here,
    and said so), and its dry run prints the runs a start its costs call for and the precision
    expected at the sweep's fewest and most runs."""
    profile = tmp_path / "h100.json"
    profile.write_text((FIXTURES / "h100_scout_tp4.json").read_text())
    text = scout_blocks_text()
    runbook = tmp_path / "scout.yaml"
    runbook.write_text(text.replace("    repeats: auto\n", "    repeats: auto\n    design: sequential\n    noise: h100.json\n", 1))
    done = cli("run", runbook, "--dry-run", "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "between-start sd 0.020 (5.0 df), within-start sd 0.040 (18.0 df)" in out and "provisional" not in out
    assert "the profile's device and vLLM build are not compared" in out
    noise = read_profile(profile).noise
    best = runs_per_start(noise, 420.0, 75.0)
    assert f"design: {best.runs} runs a start: a start costs 420 s, a run 75 s" in out
    spans = f"+-{100 * half_width(noise, 2):.1f}% at 2 runs, +-{100 * half_width(noise, 10):.1f}% at 10 runs"
    assert f"expected precision: a speedup of two points, one server start each: {spans}" in out
    assert half_width(noise, 10) < half_width(noise, 2) < 0.2  # a quiet node: runs narrow it, within +-20%
    # design: auto (the runbook's): back-to-back blocks on the 8-GPU node, the pairs a block from the costs
    runbook.write_text(text.replace("    repeats: auto\n", "    repeats: auto\n    noise: h100.json\n", 1))
    out = cli("run", runbook, "--dry-run", "--runs-dir", tmp_path / "runs").stdout
    paired = Noise(noise.between, noise.within, Component(2 * noise.within.var, noise.within.df, "x"))
    k = runs_per_block(paired, 2 * 420.0, 2 * 75.0, cap=10).runs
    assert k == 5 and f"({k} runs a block: a start pair costs 840 s, a run pair 150 s" in out
    assert "design: back-to-back blocks (auto: no speculation and a candidate fit side by side on the node's GPUs)" in out
    width = 100 * block_half_width(noise, 2, k)
    assert f"expected precision: a speedup against no speculation from 2 blocks of {k} pairs: +-{width:.1f}%" in out
    # the same profile against a CPU config measured here is another machine
    done = _dry(cli, tmp_path, f"noise: {profile}")
    assert done.returncode == 2 and "measured with" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_half_width_shrinks_with_runs_and_starts_and_never_below_the_start_term():
    noise = prior(0.13, 0.165, "x", 6, 72)
    one, many = half_width(noise, 2), half_width(noise, 100)
    assert many < one and half_width(noise, 10, starts=4) < half_width(noise, 10)
    floor = math.expm1(t_quantile(6, 0.975) * math.sqrt(2) * 0.13)
    assert many > floor * 0.98  # runs against one start each never average the start offsets away
