"""show --yaml: the resolved config as YAML that parses to the config itself and loads back as an
experiment (saved as DIR/experiment/NAME.yaml, hydra.searchpath=[file://DIR] experiment=NAME)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

OVERRIDES = ["target=llama4_scout", "lookahead=5", "memory.max_num_seqs=64", "parallel=tp4"]


def _show(cli, *args: str) -> str:
    res = cli("show", *args, timeout=180)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    return res.stdout


def test_yaml_parses_and_equals_the_config(cli) -> None:
    text = _show(cli, *OVERRIDES, "--yaml")
    assert text.startswith("# @package _global_\n")
    config = json.loads(_show(cli, *OVERRIDES, "--json"))["config"]
    assert yaml.safe_load(text) == config


def test_saved_yaml_loads_back_as_an_experiment(cli, tmp_path: Path) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "saved.yaml").write_text(_show(cli, *OVERRIDES, "--yaml"))
    original = json.loads(_show(cli, *OVERRIDES, "--json"))
    reloaded = json.loads(_show(cli, f"hydra.searchpath=[file://{tmp_path}]", "experiment=saved", "--json"))
    assert reloaded["config"] == original["config"]
    assert reloaded["serve_argv"] == original["serve_argv"] and reloaded["llm_kwargs"] == original["llm_kwargs"]


def test_yaml_hides_secrets_and_keeps_warnings_off_stdout(cli) -> None:
    res = cli("show", "+env.HF_TOKEN=hf_abcdefghijklmnop", "lookahead=0", "--yaml", timeout=180)
    assert res.returncode == 0
    assert "hf_abcdefghijklmnop" not in res.stdout and yaml.safe_load(res.stdout)["env"]["HF_TOKEN"] == "***"
    assert "warning:" not in res.stdout


def test_json_and_yaml_exclude_each_other(cli) -> None:
    res = cli("show", "--json", "--yaml", timeout=60)
    assert res.returncode == 2 and "not allowed with" in res.stderr
