"""Secrets never reach a record, a log line or a printed command: the one redaction function
(engine.secrets.redact) on each case, the dry runs, and the run directory's records written by the
real executor (no engine)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from llama4spec.engine.secrets import REDACTED, known_secrets, redact, redact_env, redact_yaml
from llama4spec.results.provenance import recorded_name
PLANTED = "hf_planted_secret_123"
PLANTED2 = "planted2"
API_KEY = "sk-planted-api-key-456"
OC_SECRET = "oc_env_planted_secret_789"


# -- the redaction function ---------------------------------------------------------------------
def test_a_values_under_secret_looking_names() -> None:
    env = {"HF_TOKEN": "hf_x", "VLLM_API_KEY": "k", "DB_PASSWORD": "p", "OMP_NUM_THREADS": "2",
           "TOKENIZERS_PARALLELISM": "false", "MY_SETTING": "visible"}
    assert redact_env(env) == {"DB_PASSWORD": REDACTED, "HF_TOKEN": REDACTED, "MY_SETTING": "visible",
                               "OMP_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "false", "VLLM_API_KEY": REDACTED}
    # nested: any env mapping, secret config fields; counters and variable *names* stay visible
    data = {"env": {"hf_token": "x"}, "serve": {"api_key_env": "MY_API_KEY", "api_key": "k"},
            "cluster": {"hosts": [{"env": {"NCCL_DEBUG": "INFO", "S3_SECRET": "s"}}]},
            "stats": {"num_draft_tokens": 12, "max_tokens": 5}}
    assert redact(data) == {"env": {"hf_token": REDACTED}, "serve": {"api_key_env": "MY_API_KEY", "api_key": REDACTED},
                            "cluster": {"hosts": [{"env": {"NCCL_DEBUG": "INFO", "S3_SECRET": REDACTED}}]},
                            "stats": {"num_draft_tokens": 12, "max_tokens": 5}}
    assert data["env"]["hf_token"] == "x"  # a new object; the input is unchanged


def test_b_known_values_anywhere_and_overrides_by_key() -> None:
    secrets = known_secrets({"env": {"HF_TOKEN": PLANTED, "MY_SETTING": "visible"}}, environ={})
    assert secrets == (PLANTED,)
    argv = ["llama4spec", "offline", f"+env.HF_TOKEN={PLANTED}", f"target.model=/m/{PLANTED}/x", "--json", "r.json"]
    assert redact(argv, secrets) == ["llama4spec", "offline", "+env.HF_TOKEN=***", "target.model=/m/***/x",
                                     "--json", "r.json"]
    assert redact({"deep": [{"text": f"token {PLANTED} leaked"}]}, secrets) == {"deep": [{"text": "token *** leaked"}]}
    # override text: key=value with a secret-looking last part, even without knowing the value
    overrides = ["+env.MY_API_KEY=planted2", "env.HF_TOKEN=abc", "cluster.hosts[0].env.DB_PASSWORD=pw",
                 "serve.api_key_env=MY_API_KEY", "generation.max_tokens=256", "+env.OMP_NUM_THREADS=2"]
    assert redact(overrides) == ["+env.MY_API_KEY=***", "env.HF_TOKEN=***", "cluster.hosts[0].env.DB_PASSWORD=***",
                                 "serve.api_key_env=MY_API_KEY", "generation.max_tokens=256", "+env.OMP_NUM_THREADS=2"]
    # what the rules find in one place becomes a known secret everywhere else
    found = known_secrets(overrides, environ={})
    assert PLANTED2 in found and redact(f"argv: llama4spec offline {PLANTED2}", found) == "argv: llama4spec offline ***"
    assert "1" not in known_secrets({"env": {"A_TOKEN": "1"}}, environ={})  # too short to replace everywhere


def test_c_the_api_key_value() -> None:
    environ = {"MY_API_KEY": API_KEY, "PATH": "/usr/bin"}
    secrets = known_secrets(environ=environ, names=["MY_API_KEY"])
    assert API_KEY in secrets
    assert redact({"log": f"Authorization: Bearer {API_KEY}", "PLAIN": API_KEY}, secrets) == \
        {"log": "Authorization: Bearer ***", "PLAIN": REDACTED}
    # the name of the variable is fine to show; plan.json's marker for it stays as it is
    assert redact({"secret_env": {"VLLM_API_KEY": "*** (read from $MY_API_KEY)"}}) == \
        {"secret_env": {"VLLM_API_KEY": "*** (read from $MY_API_KEY)"}}
    assert redact("VLLM_API_KEY=$MY_API_KEY (redacted)") == "VLLM_API_KEY=$MY_API_KEY (redacted)"


def test_d_credentials_in_urls() -> None:
    assert redact("http://user:pass@host:8000/v1") == "http://user:***@host:8000/v1"
    assert redact("https://hf_abc@huggingface.co/x") == "https://***@huggingface.co/x"
    assert redact(["--url", "http://u:p%40ss@10.0.0.1"]) == ["--url", "http://u:***@10.0.0.1"]
    assert redact("http://127.0.0.1:8000/health") == "http://127.0.0.1:8000/health"
    assert redact("http://host/x?token=abc&page=2") == "http://host/x?token=***&page=2"
    assert "pw1234" in known_secrets("http://u:pw1234@h", environ={})


def test_e_api_key_flags_in_argv() -> None:
    argv = ["vllm", "serve", "m", "--api-key", "sk-1", "--api-key=sk-2", "--hf-token", "t", "--tokenizer", "tok",
            "--max-num-batched-tokens", "8192", "--ssl-keyfile", "/k.pem"]
    assert redact(argv) == ["vllm", "serve", "m", "--api-key", "***", "--api-key=***", "--hf-token", "***",
                            "--tokenizer", "tok", "--max-num-batched-tokens", "8192", "--ssl-keyfile", "/k.pem"]
    assert redact("vllm serve m --api-key 'sk 1' --port 8000") == "vllm serve m --api-key *** --port 8000"
    assert redact({"extra_args": ["--api-key", "sk-123"]}) == {"extra_args": ["--api-key", "***"]}


def test_f_oc_env_interpolation_of_secret_variables() -> None:
    environ = {"MY_HF_TOKEN": OC_SECRET, "PLAIN_VAR": "not-a-secret-value", "SSH_AUTH_SOCK": "/tmp/ssh/agent.1",
               "DESKTOP_SESSION": "ubuntu-wayland", "SHORT_KEY": "abc"}
    unresolved = {"target": {"model": "https://u:${oc.env:MY_HF_TOKEN}@example.com/model"}}
    secrets = known_secrets(unresolved, environ=environ)
    assert OC_SECRET in secrets
    assert not {"not-a-secret-value", "/tmp/ssh/agent.1", "ubuntu-wayland"} & set(secrets)
    resolved = {"target": {"model": f"https://u:{OC_SECRET}@example.com/model"},
                "serve": {"extra_args": ["--served-model-name", OC_SECRET]}}
    assert OC_SECRET not in json.dumps(redact(resolved, secrets))
    # a secret-looking variable interpolated somewhere without any rule to catch it
    assert redact(f"--served-model-name {OC_SECRET}", known_secrets(environ=environ)) == "--served-model-name ***"


def test_runbook_copy_stays_yaml_with_comments() -> None:
    text = (f"# llama4spec run rb.yaml\nname: keyed  # a comment\nenv: {{HF_TOKEN: {PLANTED}, MY_SETTING: visible}}\n"
            f"overrides: [+env.MY_API_KEY={PLANTED2}]\nsteps:\n  - {{id: s, kind: serve}}\n")
    out = redact_yaml(text, (PLANTED, PLANTED2))
    assert PLANTED not in out and PLANTED2 not in out and "# a comment" in out
    data = yaml.safe_load(out)
    assert data["env"] == {"HF_TOKEN": REDACTED, "MY_SETTING": "visible"}
    assert data["overrides"] == ["+env.MY_API_KEY=***"]
    short = redact_yaml("env:\n  HF_TOKEN: abc  # short\n", ())  # too short to know: re-written from its data
    assert yaml.safe_load(short) == {"env": {"HF_TOKEN": REDACTED}}


# -- dry runs and records -----------------------------------------------------------------------
RUNBOOK = f"""# a runbook with secrets
name: secret_check
description: planted secrets must not leak
env: {{HF_TOKEN: {PLANTED}, MY_SETTING: visible}}
overrides: [serve.api_key_env=MY_API_KEY]
steps:
  - {{id: s, kind: serve}}
  - {{id: b, kind: bench, server: s}}
  - {{id: stop, kind: stop, server: s}}
  - {{id: o, kind: offline}}
"""


def _runbook(tmp_path: Path) -> Path:
    path = tmp_path / "secret_check.yaml"
    path.write_text(RUNBOOK)
    return path


def _no_planted(text: str) -> None:
    for planted in (PLANTED, PLANTED2, API_KEY):
        assert planted not in text


def test_run_dry_run_prints_no_secret(cli, tmp_path: Path) -> None:
    res = cli("run", str(_runbook(tmp_path)), f"+env.MY_API_KEY={PLANTED2}", "--dry-run",
                  "--runs-dir", str(tmp_path / "runs"), timeout=120, env={"MY_API_KEY": API_KEY})
    assert res.returncode == 0, res.stderr
    _no_planted(res.stdout + res.stderr)
    assert "HF_TOKEN=***" in res.stdout and "MY_SETTING=visible" in res.stdout
    assert "+env.MY_API_KEY=***" in res.stdout and "MY_API_KEY=***" in res.stdout
    assert "VLLM_API_KEY=$MY_API_KEY (redacted)" in res.stdout
    assert not (tmp_path / "runs").exists()


def test_serve_dry_run_and_show_print_no_secret(cli) -> None:
    # ++ (add or override): serve composes its overrides as the step's and the command line's
    res = cli("serve", "--dry-run", f"++env.HF_TOKEN={PLANTED}", f"++env.MY_API_KEY={PLANTED2}", timeout=120)
    assert res.returncode == 0, res.stderr
    _no_planted(res.stdout + res.stderr)
    assert "HF_TOKEN=***" in res.stdout and "MY_API_KEY=***" in res.stdout
    # two nodes: the follower's launch line carries its environment (`env HF_TOKEN=...` over ssh)
    res = cli("serve", "--dry-run", "parallel=tiny_two_host_tp2", "cluster=tiny_two_host",
                  f"++env.HF_TOKEN={PLANTED}", timeout=120)
    assert res.returncode == 0, res.stderr
    _no_planted(res.stdout + res.stderr)
    assert "'env HF_TOKEN=*** " in res.stdout
    res = cli("show", f"+env.HF_TOKEN={PLANTED}", f"serve.extra_args=[--api-key,{API_KEY}]",
                  f"serve.served_model_name=https://user:{PLANTED2}@host", timeout=120)
    assert res.returncode == 0, res.stderr
    _no_planted(res.stdout + res.stderr)
    assert "--api-key" in res.stdout and "HF_TOKEN=***" in res.stdout


def test_records_written_by_the_executor_keep_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from llama4spec.runbook.execute import Run
    from llama4spec.runbook.plan import plan_file

    monkeypatch.setenv("MY_API_KEY", API_KEY)  # serve.api_key_env is checked while planning
    run_dir = tmp_path / "runs" / "secret_check" / "t0"
    plan = plan_file(_runbook(tmp_path), lambda name: run_dir, [f"+env.MY_API_KEY={PLANTED2}"])
    assert any(PLANTED2 in arg for p in plan.steps for arg in p.argv)  # the offline step's argv carries it
    environ = {"PATH": "/usr/bin", "HF_TOKEN": PLANTED, "MY_API_KEY": API_KEY, "MY_UNRELATED": "1",
               "HOME": "/home/someone", "CUDA_VISIBLE_DEVICES": "0", "VLLM_LOGGING_LEVEL": "INFO",
               "GITHUB_TOKEN": "ghp_unrelated_token_value"}
    console = Console(record=True, width=120, file=io.StringIO())
    run = Run(plan, console, environ=environ)
    run.write_start()
    for p in plan.steps:
        run.write_config(p)
    run.summary["steps"][0]["error"] = f"server died; log says token={PLANTED} key {API_KEY}"
    run.write_summary()
    run.say(f"a log line with {PLANTED} and {PLANTED2}")

    files = [f for f in run_dir.rglob("*") if f.is_file()]
    names = {f.name for f in files}
    assert {"runbook.yaml", "plan.json", "environment.json", "host.json", "summary.md", "config.yaml"} <= names
    for f in files:
        text = f.read_text()
        _no_planted(text)
        assert "ghp_unrelated_token_value" not in text, f
    _no_planted(console.export_text())

    env = json.loads((run_dir / "environment.json").read_text())
    assert env["HF_TOKEN"] == REDACTED and env["MY_API_KEY"] == REDACTED and env["MY_SETTING"] == "visible"
    assert env["VLLM_API_KEY"] == REDACTED and env["CUDA_VISIBLE_DEVICES"] == "0" and env["PATH"] == "/usr/bin"
    assert "MY_UNRELATED" not in env and "HOME" not in env and "GITHUB_TOKEN" not in env
    run_sets = set(plan.runbook.env) | {k for p in plan.steps for k in p.env} | {k for p in plan.steps for k in p.secret_env}
    assert all(recorded_name(k) or k in run_sets for k in env), sorted(env)

    steps = json.loads((run_dir / "plan.json").read_text())
    serve = next(s for s in steps if s["id"] == "s")
    assert serve["env"]["HF_TOKEN"] == REDACTED and serve["env"]["MY_API_KEY"] == REDACTED
    assert serve["secret_env"] == {"VLLM_API_KEY": "*** (read from $MY_API_KEY)"}
    offline = next(s for s in steps if s["id"] == "o")
    assert "+env.MY_API_KEY=***" in offline["argv"] and "+env.MY_API_KEY=***" in offline["overrides"]
    copy = yaml.safe_load((run_dir / "runbook.yaml").read_text())
    assert copy["env"] == {"HF_TOKEN": REDACTED, "MY_SETTING": "visible"}
    assert (run_dir / "runbook.yaml").read_text().startswith("# a runbook with secrets")
    config = yaml.safe_load(next(f for f in files if f.name == "config.yaml").read_text())
    assert config["env"]["MY_API_KEY"] == REDACTED and config["serve"]["api_key_env"] == "MY_API_KEY"
