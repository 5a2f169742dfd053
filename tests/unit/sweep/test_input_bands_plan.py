"""A sweep's ``bands:`` planned: a client axis of the matrix, the prompt file's band written beside a
run, and bad bands refused at plan time, one line each (exit 2 from the command line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama4spec.errors import UserError
from llama4spec.runbook.plan import plan_file
from tests.helpers import REPO

RUN_DIR = Path("runs/RUNBOOK/TIMESTAMP")
HEAD = """
name: banded
overrides: [target=tiny, memory=cpu, {bench}]
steps:
  - id: s
    kind: sweep
    matrix: {{draft: [none, tiny_eagle_contrast], lookahead: [3], bench.max_concurrency: [1, 4]}}
    repeats: 2
    bands: {bands}
"""
RANDOM = "bench=random_tiny, bench.num_prompts=8, bench.output_len=16"


def _write(tmp_path: Path, bands: str, bench: str = RANDOM) -> Path:
    path = tmp_path / "banded.yaml"
    path.write_text(HEAD.format(bands=bands, bench=bench))
    return path


def _plan(path: Path):
    return plan_file(path, lambda name: RUN_DIR, [])


def _prompts(tmp_path: Path, words: list[int]) -> str:
    """A prompt file of one prompt per entry, that many words (tokens: words + <s>)."""
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"prompt": " ".join(f"w{10 + j}" for j in range(n))}) + "\n" for n in words))
    return f"bench=tiny_bands, bench.dataset_path={path}"


def test_random_bands_are_a_client_axis(tmp_path: Path) -> None:
    plan = _plan(_write(tmp_path, "[16, 64, 256]"))
    sweep = next(p for p in plan.steps if p.step.kind == "sweep")
    assert len(sweep.step.expanded.points) == 2 * 2 * 3
    lengths = {p.composed.cfg.bench.input_len for p in plan.steps if p.step.kind == "bench"}
    assert lengths == {16, 64, 256}
    assert sum(p.step.kind == "serve" for p in plan.steps) == 2  # a band is the client's: no server more


def test_a_prompt_files_band_is_written_beside_its_run(tiny_dir, tmp_path: Path) -> None:
    from llama4spec.engine.bench_flags import band_file, bench_flags
    from llama4spec.serving.band_prompts import write_band

    plan = _plan(_write(tmp_path, "[[1, 4], [5, 8]]", _prompts(tmp_path, [2, 3, 3, 3, 4, 5, 6, 6, 7, 9])))
    point = next(p for p in plan.steps if p.step.kind == "bench" and p.composed.cfg.bench.input_band == "5-8")
    cfg, out = point.composed.cfg, tmp_path / "run"
    written = write_band(cfg, out)
    assert written == band_file(out, "5-8")
    kept = [len(json.loads(line)["prompt"].split()) + 1 for line in written.read_text().splitlines()]
    assert kept == [5, 6, 7, 7, 8]  # tokens: words + <s>; the 9-word prompt (10 tokens) is in no band
    flags = bench_flags(cfg, "http://127.0.0.1:8000", out, "run=0.json", "x")
    assert flags[flags.index("--dataset-path") + 1] == str(written) and "--input-len" not in flags


@pytest.mark.parametrize("bands, bench, fragment", [
    ("[[1, 16], [10, 32]]", RANDOM, "bands: [1, 16] and [10, 32] overlap"),
    ("[16, 16]", RANDOM, "bands: 16 and 16 overlap"),
    ("[[16, 8], [20, 30]]", RANDOM, "bands: [16, 8] is empty (LOW above HIGH)"),
    ("[16, 2040]", RANDOM, "bands: 2040 (2040 tokens) + bench.output_len 16 exceed the server's max_model_len 2048"),
    ("[16, 64]", "bench=random_tiny, bench.num_prompts=3", "bands: 16 holds 3 distinct prompts of random prompts a "
     "run; a verdict over a band needs at least 4"),
    ("[[1, 16], [17, 64]]", RANDOM, "bands: random prompts have one length a band"),
    ("[16]", RANDOM, "bands: give 2 to 16 input-length bands"),
    ("[16, x]", RANDOM, "bands: 'x' is neither a length (64), [LOW, HIGH] tokens nor a SPEED-Bench throughput subset"),
])
def test_bad_bands_are_one_line_each(tmp_path: Path, bands: str, bench: str, fragment: str) -> None:
    with pytest.raises(UserError) as info:
        _plan(_write(tmp_path, bands, bench))
    lines = 2 if "holds" in fragment else 1  # a band too small: one line for each such band, each named
    assert len(info.value.problems) == lines and fragment in info.value.problems[0], info.value.problems


def test_a_prompt_files_band_empty_or_too_small_is_named(tiny_dir, tmp_path: Path) -> None:
    bench = _prompts(tmp_path, [2, 3, 3, 4, 8, 50])
    with pytest.raises(UserError) as info:
        _plan(_write(tmp_path, "[[1, 8], [9, 16], [17, 40]]", bench))
    assert len(info.value.problems) == 2  # both named, in band order
    assert "[9, 16] holds 1 distinct prompts" in info.value.problems[0]
    assert "[17, 40] is empty: no prompt of" in info.value.problems[1]


def test_bands_beside_a_band_axis_in_the_matrix_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "both.yaml"
    path.write_text(HEAD.format(bands="[16, 64]", bench=RANDOM).replace("lookahead: [3],", "lookahead: [3], "
                                                                          "bench.input_len: [8, 32],"))
    with pytest.raises(UserError, match="bands: sets bench.input_len per band, and the matrix sweeps it too"):
        _plan(path)


def test_the_bad_bands_of_the_command_line_are_one_line_and_exit_2(cli, tmp_path: Path) -> None:
    path = _write(tmp_path, "[[1, 16], [10, 32]]")
    done = cli("run", str(path), "--dry-run", timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout
    assert done.stderr.strip().splitlines() == [
        f"error: {path}: step 's': bands: [1, 16] and [10, 32] overlap; give bands that share no length"]


def test_the_shipped_banded_runbooks_plan(tiny_dir) -> None:
    plan = plan_file(REPO / "runbooks" / "tiny_cpu_bands.yaml", lambda name: RUN_DIR, [])
    bands = {p.composed.cfg.bench.input_band for p in plan.steps if p.step.kind == "bench"}
    assert bands == {"1-16", "17-64", "65-128"}


def test_the_scout_runbooks_speed_bench_bands_parse_under_vllms_own_parser() -> None:
    from vllm.benchmarks.serve import add_cli_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from llama4spec.engine.bench_flags import bench_flags

    plan = plan_file(REPO / "runbooks" / "llama4_scout_eagle_bands.yaml", lambda name: RUN_DIR, [])
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    subsets = set()
    for p in (q for q in plan.steps if q.step.kind == "bench"):
        args = parser.parse_args(bench_flags(p.composed.cfg, "http://127.0.0.1:8000", Path("/tmp"), "r.json", "x"))
        assert args.dataset_name == "speed_bench" and args.dataset_path == "data/speed-bench"
        assert args.speed_bench_output_len == 4096  # vLLM's default, which the plan checks against max_model_len
        subsets.add(args.speed_bench_dataset_subset)
    assert subsets == {"throughput_1k", "throughput_8k", "throughput_16k"}
    sweep = next(p for p in plan.steps if p.step.kind == "sweep")
    said: list[str] = []
    from llama4spec.runbook.steps import kind

    kind(sweep.step.kind).describe(sweep, said.append)
    assert any("prepared with NVIDIA's script" in line and "4096 output tokens" in line for line in said), said


def test_a_speed_bench_band_beyond_max_model_len_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "scout.yaml"
    path.write_text((REPO / "runbooks" / "llama4_scout_eagle_bands.yaml").read_text().replace(
        "throughput_16k]", "throughput_32k]"))
    with pytest.raises(UserError) as info:
        _plan(path)
    assert info.value.problems == [
        f"{path}: step 'sweep': bands: throughput_32k (32768 tokens) + its output length (--speed-bench-output-len) "
        f"4096 exceed the server's max_model_len 32768; drop the band or raise memory.max_model_len"]


def test_speed_bench_subsets_are_bands_of_speed_bench_only(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="SPEED-Bench subsets are bands of bench.dataset_name=speed_bench"):
        _plan(_write(tmp_path, "[throughput_1k, throughput_8k]"))
    with pytest.raises(UserError, match="give SPEED-Bench subsets or token counts, not both"):
        _plan(_write(tmp_path, "[16, throughput_8k]"))


def test_a_schedule_verified_beside_bands_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "[16, 64]")
    path.write_text(path.read_text() + "    verify_schedule: true\n")
    with pytest.raises(UserError, match="verify_schedule measures one lookahead per batch size for every input length"):
        _plan(path)


SWEEP_CLI = ["sweep", "draft=none,tiny_eagle_imperfect", "lookahead=3", "target=tiny", "memory=cpu", "bench=random_tiny"]


def test_the_sweep_command_bands_its_prompts_with_bands(cli) -> None:
    done = cli(*SWEEP_CLI, "--bands", "16,128,512", "--dry-run", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "matrix: draft [none, tiny_eagle_imperfect] x bench.input_len [16, 128, 512]" in done.stdout
    assert "input-length bands (bench.input_len): 16, 128, 512" in done.stdout


@pytest.mark.parametrize("value, extra, said", [
    ("16,16", [], "--bands: 16 and 16 overlap"),
    ("x,y-z", [], "--bands: 'x' is neither a length (64), [LOW, HIGH] tokens nor a SPEED-Bench throughput subset"),
    ("16,128", ["bench.input_len=8,32"], "--bands: sets bench.input_len per band, and the matrix sweeps it too"),
    ("1-16,17-64", [], "bands: random prompts have one length a band"),
])
def test_bad_bands_on_the_sweep_command_are_one_line_exit_2(cli, value: str, extra: list, said: str) -> None:
    done = cli(*SWEEP_CLI, *extra, "--bands", value, "--dry-run", timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert said in lines[0] and len(lines) == (2 if value == "x,y-z" else 1), lines
