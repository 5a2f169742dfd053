"""Doctor and plan trust nothing: config.json values are checked before any arithmetic, and each
model's config.json is built through the installed transformers' config class, as vLLM 0.32 does."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.errors import UserError
from llama4spec.preflight import examine, hfconfig, pairing, values
from llama4spec.preflight.file_checks import transformers_config
from llama4spec.preflight.memory import memory_plan, suggest
from llama4spec.preflight.rule import ERROR, INFO, Pairing
from llama4spec.preflight.sources import KNOWN_DIR, ModelConfig
from tests.helpers import DROP, REPO, edited

HEAD = "morgendave/EAGLE-Llama-4-Scout-17B-16E-Instruct"
HEAD_FILE = KNOWN_DIR / "morgendave--EAGLE-Llama-4-Scout-17B-16E-Instruct.json"
SCOUT_FILE = KNOWN_DIR / "meta-llama--Llama-4-Scout-17B-16E-Instruct.json"
FIX = 'download the head, set "attn_temperature_tuning": true in its config.json, and pass draft.model=DIR'


@pytest.fixture(scope="module")
def check_cache(tmp_path_factory) -> Path:
    """One fresh verdict cache for this module: the first check of each config runs transformers for real."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path_factory, check_cache):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(check_cache))


def head_dir(tmp_path: Path, **changes) -> Path:
    """A local copy of the reference Scout head's config.json with ``changes``."""
    config = json.loads(HEAD_FILE.read_text())
    config.update(changes)
    d = tmp_path / "head"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config, indent=2))
    return d


def errors(found) -> list:
    return [f for f in found if f.severity == ERROR]


# -- the strict error is real, and the check imports neither torch nor vllm ----------------------
def test_transformers_rejects_an_int_attn_temperature_tuning():
    head = json.loads(HEAD_FILE.read_text())
    assert head["attn_temperature_tuning"] == 4  # the bundled copy carries the published value
    answer = hfconfig.run_child([head, dict(head, attn_temperature_tuning=True), json.loads(SCOUT_FILE.read_text())])
    bad, fixed, scout = (hfconfig.Verdict(**v) for v in answer["verdicts"])
    assert bad.status == "rejected" and bad.cls == "Llama4TextConfig"
    assert bad.error == "StrictDataclassFieldValidationError"
    assert bad.field == "attn_temperature_tuning" and bad.mismatch == ("bool", "int", "4")
    assert (fixed.status, fixed.cls) == ("ok", "Llama4TextConfig")
    assert (scout.status, scout.cls) == ("ok", "Llama4Config")
    assert answer["torch"] is False and answer["vllm"] is False  # only transformers' config classes loaded


def test_the_doctor_process_imports_no_transformers_torch_or_vllm(tmp_path):
    probe = (
        "import sys\n"
        "from llama4spec.config.compose import compose_config\n"
        "from llama4spec.preflight import examine, pairing\n"
        "found = examine(pairing(compose_config(['experiment=scout_eagle_reference']).cfg))\n"
        "print(sorted(f.rule for f in found))\n"
        "print(sorted(m for m in ('torch', 'vllm', 'transformers') if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=300,
                         env={**_env(), "XDG_CACHE_HOME": str(tmp_path)})  # cold cache: the child really runs
    assert run.returncode == 0, run.stderr
    rules, heavy = run.stdout.strip().splitlines()[-2:]
    assert "transformers-config" in rules and heavy == "[]"


def _env() -> dict:
    import os

    return {**os.environ, "HF_HUB_OFFLINE": "1"}


# -- the rule ------------------------------------------------------------------------------------
def test_rule_fires_on_the_bundled_scout_head():
    p = pairing(compose_config(["experiment=scout_eagle_reference"]).cfg)
    assert p.draft.source == "bundled" and p.target.source == "bundled"
    found = transformers_config(p)
    assert len(found) == 1  # the head only: the Scout target's own bundled config passes
    f = found[0]
    assert f.severity == ERROR and f.rule == "transformers-config"
    assert "draft's config.json" in f.what and "bundled copy" in f.what and HEAD in f.what
    assert "attn_temperature_tuning" in f.what and "expects bool, got int 4" in f.what
    assert "vLLM 0.32" in f.why and "start-up" in f.why
    assert FIX in f.fix and f"hf download {HEAD}" in f.fix
    assert [x.rule for x in errors(examine(p))] == ["transformers-config"]


def test_rule_is_silent_on_the_tiny_pair(tiny_dir):
    p = pairing(compose_config([]).cfg)
    assert transformers_config(p) == []
    assert examine(p) == []


def test_rule_is_silent_on_the_scout_target_alone():
    p = pairing(compose_config(["target=llama4_scout", "draft=none", "parallel=tp4"]).cfg)
    assert p.draft is None and transformers_config(p) == []


def test_a_local_head_with_true_passes(tmp_path):
    d = head_dir(tmp_path, attn_temperature_tuning=True)
    p = pairing(compose_config(["experiment=scout_eagle_reference", f"draft.model={d}"]).cfg)
    assert p.draft.source == "local"
    assert transformers_config(p) == []
    assert errors(examine(p)) == []


def test_a_local_head_with_an_int_names_the_file(tmp_path):
    d = head_dir(tmp_path)
    p = pairing(compose_config(["experiment=scout_eagle_reference", f"draft.model={d}"]).cfg)
    (f,) = transformers_config(p)
    assert str(d / "config.json") in f.what and "bundled" not in f.what
    assert f.fix == f'set "attn_temperature_tuning": true in {d / "config.json"}'


def test_cli_doctor_on_the_reference_experiment(cli):
    run = cli("doctor", "experiment=scout_eagle_reference", env={"HF_HUB_OFFLINE": "1"})
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert "transformers-config" in run.stdout and "bundled copy" in run.stdout and FIX in run.stdout


def test_without_transformers_the_rule_is_an_info_note(tiny_dir, monkeypatch):
    monkeypatch.setattr(hfconfig, "transformers_version", lambda: None)
    p = pairing(compose_config([]).cfg)
    (f,) = examine(p)
    assert f.severity == INFO and f.rule == "transformers-config" and "not installed" in f.what


def test_a_child_that_cannot_start_is_an_info_note(tiny_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing cached: the child must run
    monkeypatch.setattr(hfconfig.sys, "executable", str(tmp_path / "no-python"))
    (f,) = transformers_config(pairing(compose_config([]).cfg))
    assert f.severity == INFO and "cannot start" in f.what


def test_verdicts_are_cached(tiny_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    configs = [m.config for m in pairing(compose_config([]).cfg).models]
    first = hfconfig.check(configs)
    assert [v.status for v in first] == ["ok", "ok"] and len(list(hfconfig.cache_dir().glob("*.json"))) == 2

    def no_child(*args, **kwargs):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(hfconfig, "run_child", no_child)
    assert hfconfig.check(configs) == first
    (next(hfconfig.cache_dir().glob("*.json"))).write_text("[not a verdict")  # a damaged entry is a miss
    with pytest.raises(AssertionError, match="cache should have answered"):
        hfconfig.check(configs)


# -- malformed config.json: one finding or one line, never a traceback ----------------------------
MALFORMED = {
    "heads-zero": ({"num_attention_heads": 0}, "'num_attention_heads' is 0"),
    "hidden-negative": ({"hidden_size": -64}, "'hidden_size' is -64"),
    "text-config-list": ({"text_config": [1, 2]}, "'text_config' is a list"),
    "head-dim-not-derivable": ({"head_dim": None, "hidden_size": 250}, "'head_dim' is absent"),
    "vocab-not-a-number": ({"vocab_size": "lots"}, "'vocab_size' is 'lots'"),
}


def malformed_dir(tiny_dir: Path, tmp_path: Path, role: str, changes: dict) -> Path:
    """A copy of a tiny model with ``changes`` in its config.json (None removes a key)."""
    return edited(tiny_dir / role, tmp_path / role, **{k: DROP if v is None else v for k, v in changes.items()})


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("role", ["target", "draft"])
def test_malformed_config_doctor_cli(cli, case, role, tiny_dir, tmp_path):
    changes, words = MALFORMED[case]
    d = malformed_dir(tiny_dir, tmp_path, role, changes)
    run = cli("doctor", f"{role}.model={d}", env={"HF_HUB_OFFLINE": "1"})
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and run.stderr.strip() == ""
    lines = [line for line in run.stdout.splitlines() if line.startswith("error ")]
    assert len(lines) == 1, run.stdout
    assert "config-values" in lines[0] and words in lines[0] and str(d / "config.json") in lines[0]
    assert lines[0].split(":", 1)[1].lstrip().startswith(f"{role} config.json")


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("role", ["target", "draft"])
def test_malformed_config_memory_cli(cli, case, role, tiny_dir, tmp_path):
    changes, words = MALFORMED[case]
    d = malformed_dir(tiny_dir, tmp_path, role, changes)
    run = cli("memory", f"{role}.model={d}", env={"HF_HUB_OFFLINE": "1"})
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), run.stderr
    assert f"{role} config.json ({role}.model={d})" in lines[0] and words in lines[0]


def test_malformed_config_validate_cli(cli, tiny_dir, tmp_path):
    d = malformed_dir(tiny_dir, tmp_path, "target", {"num_attention_heads": 0})
    run = cli("validate", f"target.model={d}", env={"HF_HUB_OFFLINE": "1"})
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "num_attention_heads" in run.stderr


def test_malformed_config_gate_refuses_in_one_line(tiny_dir, tmp_path):
    from rich.console import Console

    from llama4spec.preflight import gate

    d = malformed_dir(tiny_dir, tmp_path, "draft", {"num_key_value_heads": 0})
    with pytest.raises(UserError) as err:
        gate(compose_config([f"draft.model={d}"]).cfg, Console(record=True))
    assert any("'num_key_value_heads' is 0" in line for line in err.value.problems)


# -- no mutation of a config.json crashes the doctor or the planner ------------------------------
BAD_VALUES = [0, -1, "x", 1.5, True, [], {}, None, 10**30]
KEYS = values.POSITIVE_INTS + values.NON_NEGATIVE_INTS + values.INT_LISTS + ("architectures", "model_type", "text_config",
                                                                              "quantization_config", "vision_config")


@pytest.fixture
def no_transformers_child(monkeypatch):
    """The mutation sweep checks llama4spec's own arithmetic: every file passes transformers here."""
    monkeypatch.setattr(hfconfig, "check", lambda configs, version=None: [hfconfig.Verdict("ok", "X")] * len(configs))


@pytest.mark.parametrize("base", ["scout", "tiny"])
def test_no_value_crashes_doctor_or_planner(base, tiny_dir, no_transformers_child):
    cfg = compose_config(["experiment=scout_eagle_reference", "hardware=h100_80gb"] if base == "scout" else []).cfg
    p0 = pairing(cfg)
    for role in ("target", "draft"):
        for key in KEYS:
            for value in BAD_VALUES:
                target, draft = copy.deepcopy(p0.target.config), copy.deepcopy(p0.draft.config)
                config = target if role == "target" else draft
                text = values.text_of(config)
                (config if key in ("architectures", "text_config", "quantization_config", "vision_config") else text)[key] = value
                tm = ModelConfig(p0.target.ref, target, p0.target.source, p0.target.path, "target.model")
                dm = ModelConfig(p0.draft.ref, draft, p0.draft.source, p0.draft.path, "draft.model")
                found = examine(Pairing(cfg, tm, dm))  # findings, never an exception
                assert all("cannot read" not in f.what for f in found), (role, key, value, found)
                try:
                    suggest(cfg, target, draft, 79.19)
                except UserError as err:
                    assert len(err.problems) >= 1 and all(role in line for line in err.problems)


@pytest.mark.parametrize("path", sorted(KNOWN_DIR.glob("*.json")), ids=lambda p: p.stem)
def test_bundled_configs_have_sane_values(path):
    config = json.loads(path.read_text())
    assert values.problems(config) == [] and values.planner_problems(config) == []


def test_planner_names_a_missing_key(tiny_dir):
    cfg = compose_config([]).cfg
    p = pairing(cfg)
    target = {k: v for k, v in p.target.config.items() if k != "num_key_value_heads"}
    with pytest.raises(UserError, match="'num_key_value_heads' is absent"):
        memory_plan(cfg, target, p.draft.config, 64)
