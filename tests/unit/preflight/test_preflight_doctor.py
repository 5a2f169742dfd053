"""Every doctor rule fires on its broken fixture and stays silent on the good tiny pair."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.preflight import gate, pairing
from llama4spec.preflight.doctor import RULES, examine
from llama4spec.preflight.kvcache import FORCE_HYBRID
from llama4spec.preflight.rule import ERROR, INFO, WARNING
from llama4spec.errors import UserError
from tests.helpers import DROP, edited, run_cli


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf")))



def draft(tmp_path: Path, tiny_dir: Path, **changes) -> list[str]:
    return [f"draft.model={edited(tiny_dir / 'draft', tmp_path / 'draft', **changes)}"]


def target(tmp_path: Path, tiny_dir: Path, **changes) -> list[str]:
    return [f"target.model={edited(tiny_dir / 'target', tmp_path / 'target', **changes)}"]


def eagle3_head(tmp_path: Path, tiny_dir: Path, ids, **changes) -> Path:
    """A copy of the tiny EAGLE-3 head reading the target layers ``ids``."""
    return edited(tiny_dir / "draft_eagle3", tmp_path / "draft_eagle3",
                  eagle_config={"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True}, **changes)


ALL_CHUNKED = [1] * 8  # the tiny target's 8 layers without a NoPE (full-attention) layer
# rule -> (severity expected, how to break the pair)
BROKEN = {
    "draft-class": (ERROR, lambda tmp, tiny: draft(tmp, tiny, architectures=["Qwen2ForCausalLM"])),
    "yoco-keys": (ERROR, lambda tmp, tiny: draft(tmp, tiny, yoco_global_kv_layer=DROP)),
    "draft-vocab": (ERROR, lambda tmp, tiny: draft(tmp, tiny, draft_vocab_size=DROP)),
    "draft-moe": (ERROR, lambda tmp, tiny: draft(tmp, tiny, moe_layers=[0], interleave_moe_layer_step=1)),
    "no-rope-layers": (ERROR, lambda tmp, tiny: draft(tmp, tiny, no_rope_layers=[1, 0])),
    "compatible": (ERROR, lambda tmp, tiny: draft(tmp, tiny, hidden_size=512)),
    "parallel": (ERROR, lambda tmp, tiny: ["parallel=tp4", "parallel.draft_tensor_parallel_size=2"]),
    "eagle-draft-tp": (WARNING, lambda tmp, tiny: ["parallel=tp4_draft_tp1"]),
    "prefix-caching": (ERROR, lambda tmp, tiny: [*target(tmp, tiny, no_rope_layers=ALL_CHUNKED),
                                                 "serve.enable_prefix_caching=true"]),
    "hybrid-kv-cache": (ERROR, lambda tmp, tiny: [f'serve.extra_args=["{FORCE_HYBRID}"]']),
    "removed-flags": (ERROR, lambda tmp, tiny: ['serve.extra_args=["--num-lookahead-slots=3"]']),
    "max-model-len": (ERROR, lambda tmp, tiny: ["memory.max_model_len=4096"]),
    "trust-remote-code": (WARNING, lambda tmp, tiny: ["target.trust_remote_code=true"]),
    "exposed-server": (WARNING, lambda tmp, tiny: ["serve.host=0.0.0.0"]),
    "lookahead-schedule": (WARNING, lambda tmp, tiny: ["draft.lookahead_schedule=[[1,4,3]]",
                                                       "parallel.data_parallel_size=2"]),
    "cpu-sampling": (ERROR, lambda tmp, tiny: ["generation.temperature=0.8"]),
    "async-scheduling": (INFO, lambda tmp, tiny: ["draft=ngram"]),
    "draft-model-vocab": (ERROR, lambda tmp, tiny: [
        "draft=tiny_draft_model", f"draft.model={edited(tiny / 'draft_model', tmp / 'draft_model', vocab_size=512)}"]),
    "method-runs-here": (ERROR, lambda tmp, tiny: ["draft=ngram_gpu"]),
    "eagle3-aux-layers": (ERROR, lambda tmp, tiny: ["draft=tiny_eagle3", f"draft.model={eagle3_head(tmp, tiny, [1, 4, 9])}"]),
}
# The environment a rule's fixture needs besides its overrides (the CPU fix's plugin left out).
ENV = {"cpu-sampling": {"VLLM_PLUGINS": ""}}


def test_every_rule_has_a_fixture():
    assert set(BROKEN) == set(RULES)


def test_good_pair_is_silent(tiny_dir):
    assert examine(pairing(compose_config([]).cfg)) == []


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_rule_fires_on_its_fixture(rule, tiny_dir, tmp_path, monkeypatch):
    for name, value in ENV.get(rule, {}).items():
        monkeypatch.setenv(name, value)
    severity, broken = BROKEN[rule]
    p = pairing(compose_config(broken(tmp_path, tiny_dir)).cfg)
    fired = RULES[rule](p)
    assert fired and fired[0].severity == severity
    assert all(f.what and f.why and f.fix for f in fired)
    good = pairing(compose_config([]).cfg)
    assert RULES[rule](good) == []


@pytest.mark.parametrize("ids, changes, severity, words", [
    ([1, 4, 7], {}, None, ""),  # the shipped head
    ([0, 4, 8], {}, None, ""),  # 0: the embedding, 8: after the last of the target's 8 layers
    ([1, 4, 9], {}, ERROR, "outside 0..8"),
    ([1, 4, 4], {}, ERROR, "fc reads 3 hidden states but it names 2 distinct"),
    ([1, 4], {"num_aux_hidden_states": 3}, ERROR, "fc reads 3 hidden states but it names 2"),
    ([7, 4, 1], {}, WARNING, "out of order"),
    (["1", 4, 7], {}, ERROR, "list of target layer numbers"),
    ([1, 4, 7], {"eagle_aux_hidden_state_layer_ids": [1, 4, 20]}, ERROR, "[20]"),  # the top-level list wins
])
def test_eagle3_aux_layers(ids, changes, severity, words, tiny_dir, tmp_path):
    head = eagle3_head(tmp_path, tiny_dir, ids, **changes)
    found = RULES["eagle3-aux-layers"](pairing(compose_config(["draft=tiny_eagle3", f"draft.model={head}"]).cfg))
    assert [f.severity for f in found] == ([severity] if severity else [])
    assert all(words in f.line() for f in found)


def test_removed_speculative_config_key(tiny_dir):
    cfg = compose_config(["serve.extra_args=[--speculative-config,'{\"prefill_token_shift\": false}']"]).cfg
    found = RULES["removed-flags"](pairing(cfg))
    assert [f.what for f in found] == ["--speculative-config has 'prefill_token_shift'"]


@pytest.mark.parametrize("setting", ["true", "null"])
def test_prefix_caching_with_the_tiny_eagle_pair_is_allowed(tiny_dir, setting):
    """The tiny target has NoPE layers, so vLLM 0.32 promotes its chunked layers to full attention."""
    cfg = compose_config(["draft=tiny_eagle", f"serve.enable_prefix_caching={setting}"]).cfg
    assert examine(pairing(cfg)) == []


def test_prefix_caching_left_to_vllm_on_an_all_chunked_target_is_an_error(tiny_dir, tmp_path):
    overrides = [*target(tmp_path, tiny_dir, no_rope_layers=ALL_CHUNKED), "serve.enable_prefix_caching=null"]
    found = RULES["prefix-caching"](pairing(compose_config(overrides).cfg))
    assert found and "left to vLLM" in found[0].what and "draft.disable_eagle_block_drop=true" in found[0].fix
    kept = RULES["prefix-caching"](pairing(compose_config([*overrides, "draft.disable_eagle_block_drop=true"]).cfg))
    assert kept == []
    no_draft = RULES["prefix-caching"](pairing(compose_config([*overrides, "draft=none"]).cfg))
    assert no_draft == []


def test_a_later_flag_turns_the_hybrid_manager_off_again(tiny_dir):
    flags = f'serve.extra_args=["{FORCE_HYBRID}","--disable-hybrid-kv-cache-manager"]'
    assert RULES["hybrid-kv-cache"](pairing(compose_config([flags]).cfg)) == []


def test_tokenizer_mismatch(tiny_dir, tmp_path):
    d = edited(tiny_dir / "draft", tmp_path / "draft")
    tok = json.loads((d / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    vocab["w4"], vocab["w5"] = vocab["w5"], vocab["w4"]
    (d / "tokenizer.json").write_text(json.dumps(tok))
    found = RULES["compatible"](pairing(compose_config([f"draft.model={d}"]).cfg))
    assert [f.severity for f in found] == [WARNING]


def test_reference_scout_pair_is_clean_but_for_the_heads_published_config():
    """The pairing is right; the only error is the head's bundled config.json, which transformers 5.19
    refuses (attn_temperature_tuning: 4), as vLLM 0.32 would at start-up."""
    cfg = compose_config(["experiment=scout_eagle_reference"]).cfg
    found = examine(pairing(cfg))
    errors = [f for f in found if f.severity == ERROR]
    assert [f.rule for f in errors] == ["transformers-config"], [f.line() for f in errors]
    assert "attn_temperature_tuning" in errors[0].what and "bundled" in errors[0].what


def test_gate_refuses_on_error_unless_forced(tiny_dir):
    from rich.console import Console

    cfg = compose_config(["memory.max_model_len=4096"]).cfg
    console = Console(record=True, width=200)
    with pytest.raises(UserError) as err:
        gate(cfg, console)
    assert any("max_model_len" in line for line in err.value.problems)
    found = gate(cfg, console, force=True)
    assert any(f.rule == "max-model-len" for f in found)
    assert "--force" in console.export_text()
    assert gate(compose_config([]).cfg, console) == []


OFFLINE = {"HF_HUB_OFFLINE": "1"}


def one_error_line(run, *words: str) -> None:
    assert run.returncode == 2, run.stdout + run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert "Traceback" not in run.stderr
    assert lines[0].startswith("error:") and all(w in run.stderr for w in words), run.stderr


@pytest.mark.parametrize("content, words", [
    (None, ["no config.json"]),
    ("{not json", ["not valid JSON", "line 1"]),
    ("[1, 2]", ["not an object"]),
])
def test_bad_config_file(cli, tiny_dir, tmp_path, content, words):
    d = tmp_path / "target"
    shutil.copytree(tiny_dir / "target", d)
    (d / "config.json").unlink()
    if content is not None:
        (d / "config.json").write_text(content)
    for command in ("doctor", "plan"):
        one_error_line(cli(command, f"target.model={d}", env=OFFLINE), *words)


def test_unreadable_config_file(cli, tiny_dir, tmp_path):
    d = tmp_path / "target"
    shutil.copytree(tiny_dir / "target", d)
    (d / "config.json").unlink()
    (d / "config.json").mkdir()  # a directory where the file should be: unreadable as text
    one_error_line(cli("doctor", f"target.model={d}", env=OFFLINE), "config.json")


def test_unknown_model_offline(tmp_path):
    # a subprocess: huggingface_hub reads HF_HOME (an empty cache here) only when it is first imported
    run = run_cli("doctor", "target.model=nobody/no-such-model", env={**OFFLINE, "HF_HOME": str(tmp_path)},
                  timeout=120)
    one_error_line(run, "nobody/no-such-model", "offline", "hf download")


def test_unknown_hardware_preset(cli):
    one_error_line(cli("plan", "hardware=h900", env=OFFLINE), "unknown hardware option 'h900'", "h100_80gb")


def test_doctor_exit_codes(cli, tiny_dir):
    assert cli("doctor", env=OFFLINE).returncode == 0
    run = cli("doctor", "memory.max_model_len=4096", env=OFFLINE)
    assert run.returncode == 1 and "max-model-len" in run.stdout


@pytest.mark.parametrize("overrides, words", [
    (["draft=suffix"], "pip install arctic-inference==0.1.1"),
    (["draft=ngram_gpu", "--force"], "draft.method=ngram_gpu runs on CUDA only"),
    (["draft=tiny_draft_model", "VOCAB"], "the draft model's vocab_size 512 differs from the target's 256"),
])
def test_a_method_that_cannot_start_here_is_refused_in_one_line(overrides, words, tiny_dir, tmp_path):
    """Nothing starts: the doctor refuses before an engine (exit 2, one line, --force or not)."""
    pytest.importorskip("vllm")
    if importlib.util.find_spec("arctic_inference") is not None and overrides == ["draft=suffix"]:
        pytest.skip("arctic_inference is installed here")
    bad = f"draft.model={edited(tiny_dir / 'draft_model', tmp_path / 'draft_model', vocab_size=512)}"
    res = run_cli("offline", *[bad if o == "VOCAB" else o for o in overrides])
    assert res.returncode == 2, res.stdout + res.stderr
    lines = [line for line in (res.stdout + res.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in res.stderr, lines
