"""vLLM's ``prefix_repetition`` benchmark dataset: its flags as vLLM 0.32's own parser reads them,
and every setting vLLM would refuse, or run as something else than asked, refused at plan time in
one line naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.config.validate import validate
from llama4spec.engine.bench_flags import bench_flags
from llama4spec.errors import UserError
from llama4spec.runbook.plan import plan_file

TINY = ["target=tiny", "memory=cpu", "bench=prefix_repetition_tiny"]


def test_the_flags_parse_under_vllms_parser(tmp_path: Path) -> None:
    from vllm.benchmarks.serve import add_cli_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    cfg = compose_config([*TINY, "bench.prefix_repetition_suffix_len=8", "bench.num_prompts=12",
                          "bench.prefix_repetition_num_prefixes=3"]).cfg
    assert validate(cfg) == []
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args(bench_flags(cfg, "http://127.0.0.1:9000", tmp_path, "r.json", "x"))
    assert (args.dataset_name, args.dataset_path, args.num_prompts) == ("prefix_repetition", None, 12)
    assert (args.prefix_repetition_prefix_len, args.prefix_repetition_suffix_len,
            args.prefix_repetition_num_prefixes, args.output_len) == (256, 8, 3, 32)


def test_unset_keys_leave_vllms_defaults() -> None:
    cfg = compose_config([*TINY, "bench.prefix_repetition_prefix_len=null", "bench.prefix_repetition_suffix_len=null",
                          "bench.prefix_repetition_num_prefixes=null", "bench.num_prompts=20"]).cfg
    flags = bench_flags(cfg, "http://127.0.0.1:9000", Path("."), "r.json", "x")
    assert validate(cfg) == [] and not [f for f in flags if f.startswith("--prefix-repetition")]


BAD = {
    "not a multiple": (["bench.num_prompts=10"], "bench.num_prompts=10: prefix_repetition divides the prompts among "
                       "bench.prefix_repetition_num_prefixes=4 prefixes, and 10 is not a multiple of 4 (vLLM would send 8"),
    "fewer than prefixes": (["bench.num_prompts=3"], "3 is not a multiple of 4 (vLLM refuses it); give 4"),
    "another dataset": (["bench=random_tiny", "bench.prefix_repetition_num_prefixes=2"],
                        "bench.prefix_repetition_num_prefixes=2 is read only by bench.dataset_name=prefix_repetition"),
    "zero prefixes": (["bench.prefix_repetition_num_prefixes=0"], "bench.prefix_repetition_num_prefixes=0: must be"),
    "a path": (["bench.dataset_path=x.jsonl"], "bench.dataset_path=x.jsonl: vLLM's prefix_repetition dataset"),
    "an input length": (["bench.input_len=16"], "bench.input_len=16 is not read by prefix_repetition"),
    "beyond the model": (["bench.prefix_repetition_prefix_len=2000"],
                         "holds 2064 tokens (prefix + suffix + output), beyond memory.max_model_len=2048"),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_settings_are_one_problem_each(name: str) -> None:
    overrides, said = BAD[name]
    problems = validate(compose_config([*TINY, *overrides]).cfg)
    assert len(problems) == 1 and said in problems[0], problems


def test_validate_exits_2_with_one_line(cli) -> None:
    result = cli("validate", *TINY, "bench.num_prompts=10")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stdout + result.stderr
    assert len(lines) == 1 and "bench.num_prompts=10" in lines[0], lines


def test_a_warm_up_is_checked_against_the_prefixes_at_plan_time(tmp_path: Path) -> None:
    path = tmp_path / "rb.yaml"
    path.write_text("name: rb\noverrides: [target=tiny, memory=cpu, bench=prefix_repetition_tiny]\nsteps:\n"
                    "  - {id: b, kind: bench, url: 'http://127.0.0.1:9000', warmup: 6}\n")
    with pytest.raises(UserError) as err:
        plan_file(path, lambda name: tmp_path / "run", [])
    assert len(err.value.problems) == 1 and err.value.problems[0].endswith(
        "step 'b': warmup: 6: prefix_repetition divides the prompts among bench.prefix_repetition_num_prefixes=4 "
        "prefixes, and 6 is not a multiple of 4 (vLLM would send 4 (1 per prefix)); give 8 or 4")
