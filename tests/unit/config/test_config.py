"""Composition, validation and the engine arguments a config implies (no engine)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from llama4spec.config.compose import ConfigError, compose_config, group_options
from llama4spec.config.conf_dirs import conf_dir
from llama4spec.config.validate import validate
from llama4spec.engine.args import llm_kwargs, serve_argv, shell_line, speculative_config
from tests.helpers import REPO, run_cli

GROUPS = [p.name for p in sorted(conf_dir().iterdir()) if p.is_dir() and not p.name.startswith("_")]
CLUSTER_FOR = {"tiny_two_host_tp2": "tiny_two_host", "two_nodes_tp8_pp2": "two_nodes_ssh"}


@pytest.mark.parametrize(
    "group,option", [(g, o) for g in GROUPS for o in group_options(g)], ids=lambda x: str(x)
)
def test_every_preset_composes(group, option):
    overrides = [f"{group}={option}"]
    if group in ("parallel", "memory") and option not in ("tp1", "cpu"):
        overrides += ["target=llama4_scout", "draft=eagle_llama4_scout"]  # GPU layouts: a GPU-sized target
    if group == "parallel" and option in CLUSTER_FOR:
        overrides.append(f"cluster={CLUSTER_FOR[option]}")  # layouts across nodes name their hosts
    if group == "dataset" and option == "jsonl":
        overrides.append(f"dataset.path={REPO / 'tests' / 'data' / 'prompts.jsonl'}")
    composed = compose_config(overrides)
    assert composed.choices[group] == option
    if group == "draft" and option != "none":
        assert speculative_config(composed.cfg)["method"] == composed.cfg.draft.method
    assert validate(composed.cfg) == [], f"{group}={option} should be valid by itself"


def test_expected_presets_exist():
    assert {"tiny", "llama4_scout", "llama4_maverick", "llama4_maverick_fp8"} <= set(group_options("target"))
    assert {"none", "eagle_llama4_scout", "eagle3_llama4_maverick", "ngram", "tiny_eagle"} <= set(
        group_options("draft")
    )
    assert {"tp1", "tp2", "tp4", "tp8"} <= set(group_options("parallel"))
    assert "cpu" in group_options("memory")


def test_hub_ids_of_presets():
    c = compose_config(["target=llama4_maverick_fp8", "draft=eagle3_llama4_maverick"]).cfg
    assert c.target.model == "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8"
    assert c.draft.method == "eagle3"
    c = compose_config(["parallel=ray_tp8_pp2"]).cfg
    assert c.parallel.distributed_executor_backend == "ray"
    assert llm_kwargs(c)["distributed_executor_backend"] == "ray"


def test_lookahead_override_reaches_speculative_config():
    c = compose_config(["lookahead=7"]).cfg
    assert speculative_config(c)["num_speculative_tokens"] == 7


def test_ngram_speculative_config():
    c = compose_config(["draft=ngram", "lookahead=4", "draft.prompt_lookup_max=6"]).cfg
    assert speculative_config(c) == {
        "method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, "prompt_lookup_max": 6
    }


def test_no_draft_has_no_speculative_config():
    c = compose_config(["draft=none"]).cfg
    assert speculative_config(c) is None
    assert "speculative_config" not in llm_kwargs(c)
    assert "--speculative-config" not in serve_argv(c)


def test_golden_reference_scout_argv():
    c = compose_config(["experiment=scout_eagle_reference"]).cfg
    golden = (REPO / "tests" / "golden" / "scout_eagle_reference.serve.txt").read_text().strip()
    assert shell_line(serve_argv(c)) == golden
    spec = json.loads(serve_argv(c)[serve_argv(c).index("--speculative-config") + 1])
    assert spec == {
        "method": "eagle",
        "model": "morgendave/EAGLE-Llama-4-Scout-17B-16E-Instruct",
        "num_speculative_tokens": 3,
        "draft_tensor_parallel_size": 4,
        "max_model_len": 32768,
    }


def test_reference_offline_preset():
    c = compose_config(["experiment=scout_eagle_offline"]).cfg
    kwargs = llm_kwargs(c)
    assert kwargs["tensor_parallel_size"] == 4
    assert kwargs["speculative_config"]["num_speculative_tokens"] == 7
    assert c.dataset.name == "mtbench" and c.dataset.num_prompts == 1


def test_serve_binds_loopback_and_no_trust_remote_code_by_default():
    c = compose_config([]).cfg
    argv = serve_argv(c)
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert "--trust-remote-code" not in argv
    assert "trust_remote_code" not in llm_kwargs(c)
    assert "--trust-remote-code" in serve_argv(compose_config(["target.trust_remote_code=true"]).cfg)


@pytest.mark.parametrize(
    "overrides,expected",
    [
        (["draft=foo"], "unknown draft option 'foo'; valid options: eagle3_llama4_maverick"),
        (["lookahed=3"], "unknown config key 'lookahed'"),
        (["draft.methd=eagle"], "unknown config key 'draft.methd'"),
        (["lookahead=abc"], "could not be converted to Integer"),
        (["target="], "'target=' names no target option; give one of: llama4_maverick"),
        (["draft="], "'draft=' names no draft option; give one of: eagle3_llama4_maverick"),
        (["=3"], "the override '=3' has no key before '='; write overrides as key=value"),
        (["lookahead=2", "+=3"], "the override '+=3' has no key before '='"),
        (["~=x"], "the override '~=x' has no key before '='"),
    ],
)
def test_compose_errors_are_one_clear_line(overrides, expected):
    with pytest.raises(ConfigError) as info:
        compose_config(overrides)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "overrides,expected",
    [
        (["lookahead=0"], "lookahead=0: a draft needs at least 1 speculative token"),
        (["parallel=tp4", "parallel.draft_tensor_parallel_size=2"], "draft_tensor_parallel_size=2: vLLM needs 1 or"),
        (["serve.port=0"], "serve.port=0: must be a port number"),
        (["serve.extra_args=[--port,9000]"], "serve.extra_args repeats --port"),
        (["memory.kv_cache_dtype=fp9"], "memory.kv_cache_dtype 'fp9' is not one of vLLM's"),
        (["bench.max_concurrency=0"], "bench.max_concurrency=0: must be at least 1"),
        (["generation.temperature=-1"], "temperature must be 0"),
        (["bench.temperature=-0.5"], "bench.temperature=-0.5: temperature must be 0"),
        (["offline.temperatures=[0,-1]"], "offline.temperatures: -1.0 is no temperature"),
        (["offline.temperatures=[1,1]"], "offline.temperatures repeats a value"),
        (["offline.temperatures=[[1]]"], "offline.temperatures: [1] is no temperature"),
        (["offline.temperatures=[nan]"], "offline.temperatures.0=nan: must be a finite number"),
        (["offline.temperatures=[0,1]", "offline.by_category=true"], "use one of them"),
        (["offline.temperatures=[0,1]", "generation.temperature=0.7"],
         "generation.temperature=0.7 is not used where offline.temperatures (lossless: --temperatures) sets the "
         "temperatures, every prompt at each of them; drop generation.temperature, or add 0.7 to those"),
        (["draft.sample_method=nope"], "draft.sample_method=nope: must be one of vLLM's draft_sample_method"),
        (["draft=ngram", "draft.sample_method=probabilistic"], "only a model draft samples"),
        (["lookahead=1000"], "lookahead=1000: must be between 1 and 32"),
        (["serve.api_key_env=L4S_SURELY_UNSET_VAR"], "that variable is unset or empty"),
        (["target.model=/no/such/dir"], "local model directory '/no/such/dir' does not exist"),
        (["draft.model=./missing-draft"], "local model directory './missing-draft' does not exist"),
        (["dataset=jsonl"], "dataset=jsonl needs a file"),
    ],
)
def test_validation_cases(overrides, expected):
    problems = validate(compose_config(overrides).cfg)
    assert any(expected in p for p in problems), problems


def test_validation_reports_every_problem_at_once():
    problems = validate(compose_config(["lookahead=0", "serve.port=70000", "target.model=/nope"]).cfg)
    assert len(problems) == 3


@pytest.mark.parametrize("overrides,expected", [
    (["memory.max_model_len=4096"], "set memory.max_model_len to at most"),
    (["target=llama4_scout", "draft=none", "memory=default", "parallel.tensor_parallel_size=3"], "does not divide"),
])
def test_validate_runs_the_doctor_rules_that_read_config_json(cli, overrides, expected):
    """Rules that need a model's config.json live only in the doctor; `validate` runs it (network-free)."""
    result = cli("validate", *overrides)
    assert result.returncode == 2 and expected in result.stderr, result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_draft_tp_equal_to_target_tp_or_one_is_valid():
    for dtp in (1, 4):
        c = compose_config(["target=llama4_scout", "draft=eagle_llama4_scout", "parallel=tp4",
                            f"parallel.draft_tensor_parallel_size={dtp}"]).cfg
        assert validate(c) == []


def test_validate_cli_exit_code_and_no_traceback(cli):
    result = cli("validate", "lookahead=0", "serve.port=0")
    assert result.returncode == 2
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    assert len(lines) == 2 and all(l.startswith("error:") for l in lines)
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize("args", [["show", "draft=nope"], ["validate", "bogus_key=1"], ["show", "target.model=/x", "y"]])
def test_bad_overrides_exit_2_with_one_line(cli, args):
    result = cli(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len([l for l in result.stderr.splitlines() if l.strip()]) == 1


def test_show_prints_tree_llm_kwargs_and_serve_line(cli):
    result = cli("show", "experiment=scout_eagle_reference")
    assert result.returncode == 0, result.stderr
    golden = (REPO / "tests" / "golden" / "scout_eagle_reference.serve.txt").read_text().strip()
    assert golden in result.stdout
    assert "LLM(" in result.stdout and "tensor_parallel_size=4" in result.stdout
    assert "target=llama4_scout" in result.stdout


@pytest.mark.parametrize("args", [["--help"], ["show"], ["validate"]])
def test_light_commands_import_neither_vllm_nor_torch(args):
    code = (
        "import sys\nfrom llama4spec.cli.main import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('vllm', 'torch') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert "HEAVY []" in result.stdout, result.stdout + result.stderr


def test_module_entry_point_and_console_script():
    # a subprocess: this is the test of `python -m llama4spec` itself
    assert run_cli("--version").stdout.startswith("llama4spec ")
    script = REPO / ".venv" / "bin" / "llama4spec"
    if script.exists():
        assert subprocess.run([str(script), "--help"], capture_output=True, text=True).returncode == 0


def test_secret_looking_env_values_are_never_shown(cli, tmp_path):
    result = cli("show", "+env.HF_TOKEN=hf_secretvalue123", "+env.OMP_NUM_THREADS=2")
    assert result.returncode == 0, result.stderr
    assert "hf_secretvalue123" not in result.stdout
    assert "OMP_NUM_THREADS: 2" in result.stdout
