"""--json on show, validate, doctor, memory (plan) and compare: ONE JSON document on stdout, nothing
else there, in the documented shape (a JSON-schema-style check of required keys and types)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import REPO

DATA = REPO / "tests" / "data" / "serving"
NUM = (int, float)
OPT_NUM = (int, float, type(None))
OPT_STR = (str, type(None))


def check(value: Any, shape: Any, where: str = "$") -> None:
    """A small JSON-schema: a tuple/type is the allowed types, a dict lists required keys (each with
    its shape), [shape] is a list whose items all have that shape, {"*": shape} maps any key to it."""
    if isinstance(shape, dict):
        assert isinstance(value, dict), f"{where}: expected an object, got {type(value).__name__}"
        if "*" in shape:
            for key, item in value.items():
                check(item, shape["*"], f"{where}.{key}")
            return
        missing = [k for k in shape if k not in value]
        assert not missing, f"{where}: missing keys {missing}"
        for key, sub in shape.items():
            check(value[key], sub, f"{where}.{key}")
    elif isinstance(shape, list):
        assert isinstance(value, list), f"{where}: expected a list, got {type(value).__name__}"
        for i, item in enumerate(value):
            check(item, shape[0], f"{where}[{i}]")
    else:
        types = shape if isinstance(shape, tuple) else (shape,)
        assert isinstance(value, types) and not (isinstance(value, bool) and bool not in types), \
            f"{where}: {value!r} is not {types}"


FINDING = {"rule": str, "severity": str, "what": str, "why": str, "fix": str}
MODEL = {"role": str, "ref": str, "source": str, "path": OPT_STR}
SHOW = {"schema": str, "choices": {"*": str}, "config": {"target": dict, "draft": dict, "lookahead": int},
        "llm_kwargs": {"model": str}, "serve_argv": [str], "serve_line": str, "env": {"*": str}, "warnings": [str]}
VALIDATE = {"schema": str, "valid": bool, "problems": [str],
            "doctor": {"ran": bool, "skipped": OPT_STR, "findings": [FINDING]}}
DOCTOR = {"schema": str, "ok": bool, "errors": int, "warnings": int, "models": [MODEL], "findings": [FINDING]}
PARAMS = {"total": int, "linear": int, "other": int, "active": int, "parts": {"*": int}}
MEMORY = {"schema": str, "fits": bool, "problems": [str], "suggestions": [{"overrides": str, "kv_tokens": int}],
          "models": [MODEL],
          "plan": {"hardware": str, "devices": int, "device_memory": int, "utilization": NUM, "max_model_len": int,
                   "max_num_seqs": int, "target_params": PARAMS, "draft_params": (dict, type(None)),
                   "target_weights": int, "draft_weights": int, "weights_per_device": int,
                   "kv_per_token_target": int, "kv_per_token_draft": int, "kv_budget": int, "kv_tokens": int,
                   "concurrency": NUM}}
SIDE = {"label": str, "file": OPT_STR, "speculative": bool}
COMPARE = {"schema": str, "baseline": SIDE, "candidate": SIDE,
           "metrics": [{"metric": str, "label": str, "baseline": OPT_NUM, "candidate": OPT_NUM, "speedup": OPT_NUM,
                        "higher_is_better": bool}],
           "speedup": {"*": OPT_NUM}, "acceptance_length": {"baseline": OPT_NUM, "candidate": OPT_NUM},
           "acceptance_rate_per_position": {"baseline": (list, type(None)), "candidate": (list, type(None))},
           "notes": [str]}


def _json(cli, *args: str, code: int = 0) -> dict:
    res = cli(*args, timeout=180)
    assert res.returncode == code, res.stdout[-2000:] + res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    return json.loads(res.stdout)  # the whole of stdout is one document


def test_show_json(cli) -> None:
    doc = _json(cli, "show", "draft=tiny_eagle", "lookahead=5", "--json")
    check(doc, SHOW)
    assert doc["schema"] == "llama4spec.show/1"
    assert doc["config"]["lookahead"] == 5 and doc["choices"]["draft"] == "tiny_eagle"
    assert doc["serve_argv"][:2] == ["vllm", "serve"] and "--speculative-config" in doc["serve_argv"]
    assert doc["llm_kwargs"]["speculative_config"]["num_speculative_tokens"] == 5


def test_show_json_redacts_secrets(cli) -> None:
    doc = _json(cli, "show", "+env.HF_TOKEN=hf_abcdefghijklmnop", "--json")
    assert "hf_abcdefghijklmnop" not in json.dumps(doc)
    assert doc["env"]["HF_TOKEN"] == "***"


def test_validate_json_valid_and_not(cli) -> None:
    doc = _json(cli, "validate", "--json")
    check(doc, VALIDATE)
    assert doc["schema"] == "llama4spec.validate/1" and doc["valid"] is True and doc["problems"] == []
    res = cli("validate", "target=llama4_scout", "parallel=tp8", "lookahead=0", "--json", timeout=180)
    assert res.returncode == 2
    doc = json.loads(res.stdout)
    check(doc, VALIDATE)
    assert doc["valid"] is False and doc["doctor"]["ran"] is False
    assert any(p.startswith("lookahead=0") for p in doc["problems"])
    assert all(line.startswith("error: ") for line in res.stderr.splitlines())  # still one line each on stderr


def test_validate_json_unknown_option_is_a_problem(cli) -> None:
    res = cli("validate", "draft=nonexistent", "--json", timeout=180)
    assert res.returncode == 2
    doc = json.loads(res.stdout)
    assert doc["valid"] is False and "unknown draft option 'nonexistent'" in doc["problems"][0]


def test_doctor_json(cli) -> None:
    doc = _json(cli, "doctor", "--json")
    check(doc, DOCTOR)
    assert doc["schema"] == "llama4spec.doctor/1" and doc["ok"] is True and doc["errors"] == 0
    assert [m["role"] for m in doc["models"]] == ["target", "draft"]
    doc = _json(cli, "doctor", "experiment=scout_eagle_reference", "--json", code=1)  # the published head's config
    check(doc, DOCTOR)
    assert doc["ok"] is False and doc["errors"] == 1 and doc["findings"][0]["severity"] == "error"


@pytest.mark.parametrize("command", ["memory", "plan"])
def test_memory_json(cli, command: str) -> None:
    doc = _json(cli, command, "experiment=scout_eagle_reference", "--json")
    check(doc, MEMORY)
    assert doc["schema"] == "llama4spec.memory/1" and doc["fits"] is True
    assert doc["plan"]["hardware"] == "h100_80gb" and doc["plan"]["devices"] == 4
    doc = _json(cli, command, "target=llama4_scout", "draft=eagle_llama4_scout", "parallel=tp1", "hardware=h100_80gb",
                "--json", code=1)
    check(doc, MEMORY)
    assert doc["fits"] is False and doc["problems"]


def test_compare_json_is_a_ci_gate(cli) -> None:
    base, cand = DATA / "scout_baseline.vllm.json", DATA / "scout_eagle.record.json"
    doc = _json(cli, "compare", str(base), str(cand), "--json")
    check(doc, COMPARE)
    assert doc["schema"] == "llama4spec.compare/1"
    assert doc["baseline"] == {"label": "baseline", "file": str(base), "speculative": False}
    assert doc["candidate"]["label"] == "eagle-k3" and doc["candidate"]["speculative"] is True
    assert doc["speedup"]["output_throughput"] == pytest.approx(1114.62 / 710.51)
    assert doc["speedup"]["mean_tpot_ms"] == pytest.approx(22.19 / 13.85)
    assert doc["speedup"]["mean_itl_ms"] is None  # per chunk beside a speculative run: no speedup
    assert doc["acceptance_length"] == {"baseline": None, "candidate": 2.66}
    assert doc["acceptance_rate_per_position"]["candidate"] == [0.88, 0.78, 0.0]
    metric = next(m for m in doc["metrics"] if m["metric"] == "output_throughput")
    assert metric == {"metric": "output_throughput", "label": "output throughput (tok/s)", "baseline": 710.51,
                      "candidate": 1114.62, "speedup": pytest.approx(1.5688, abs=1e-4), "higher_is_better": True}
    assert {m["metric"] for m in doc["metrics"]} == set(doc["speedup"])
    assert "ITL is per streamed chunk" in doc["notes"][0]


def test_errors_stay_on_stderr_with_nothing_on_stdout(cli, tmp_path) -> None:
    for args in (["show", "draft=nonexistent", "--json"], ["doctor", "draft=nonexistent", "--json"],
                 ["memory", "lookahead=0", "--json"],
                 ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json"]):
        res = cli(*args, timeout=180)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stdout == "" and res.stderr.startswith("error: ") and "Traceback" not in res.stderr


def test_docs_ci_gate_runs_as_written(tmp_path) -> None:
    """The CI-gate pipeline of docs/machine-readable-output.md, run by a shell: passes at 1.2x, fails at 2x."""
    import os
    import subprocess
    import sys

    page = (REPO / "docs" / "machine-readable-output.md").read_text().splitlines()
    start = next(i for i, line in enumerate(page) if "--json" in line and "compare" in line and line.endswith("\\"))
    pipeline = page[start].rstrip("\\") + page[start + 1].strip()
    assert "| python -c" in pipeline, pipeline
    env = dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {pipeline}"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    stricter = pipeline.replace("< 1.2", "< 2.0")
    assert stricter != pipeline
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {stricter}"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 1
