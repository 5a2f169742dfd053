"""Classes of bad input found by a hostile battery: each is one line, exit 2, before any engine."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("args,expected", [
    (["offline", "--json", "/proc/x/run.json"], "--json /proc/x/run.json"),
    (["offline", "--json", "/"], "is a directory"),
    (["serve", "--log", "/proc/1/nope.log"], "--log /proc/1/nope.log"),
    (["bench", "--url", "http://127.0.0.1:1", "--out", "/proc/nope"], "--out /proc/nope"),
    (["bench", "--url", "not a url"], "not a server URL"),
    (["run", "runbooks/tiny_cpu_eagle_vs_baseline.yaml", "--runs-dir", "/proc/nope"], "--runs-dir /proc/nope"),
])
def test_output_paths_are_checked_before_anything_starts(cli, args, expected) -> None:
    res = cli(*args, timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    assert expected in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("value", ["[/x]", "[red]oops", "[bold]x[/bold]"])
def test_markup_in_user_values_is_printed_as_text(cli, value: str) -> None:
    res = cli("show", f"+env.L4S_MARK='{value}'", timeout=60)  # quoted: Hydra reads [..] as a list
    assert res.returncode == 0, res.stderr
    assert value in res.stdout and "MarkupError" not in res.stderr
    bad = cli("validate", f"target.model='/nonexistent/{value}'", timeout=60)
    assert bad.returncode == 2 and value in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("override,expected", [
    ("serve.port=0", "serve.port=0"),
    ("serve.port=70000", "serve.port=70000"),
    ("memory.max_model_len=-5", "memory.max_model_len=-5"),
    ("serve.health_timeout_s=0", "serve.health_timeout_s=0"),
    ("serve.engine_nice=-5", "serve.engine_nice=-5"),
    ("serve.engine_nice=20", "serve.engine_nice=20"),
    ("serve.engine_nice=high", "serve.engine_nice"),
    ("bench.num_prompts=0", "bench.num_prompts=0"),
    ("target.dtype=float8", "target.dtype 'float8'"),
    ("bench.request_rate=-1", "bench.request_rate=-1"),
    ("serve.extra_args=[--api-key,sekrit]", "repeats --api-key"),
    ("target=../../x", "not a path"),
    ("hydra.run.dir=x", "hydra.searchpath"),
])
def test_values_vllm_would_reject_are_refused_by_validate(cli, override: str, expected: str) -> None:
    res = cli("validate", override, timeout=60)
    assert res.returncode == 2 and expected in res.stderr, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and "sekrit" not in res.stderr


def test_engine_nice_on_a_multi_node_group_is_refused_not_ignored(cli) -> None:
    res = cli("validate", "parallel.nnodes=2", "serve.engine_nice=10", timeout=60)
    assert res.returncode == 2 and "serve.engine_nice=10 applies to a server on this machine" in res.stderr
    assert "Traceback" not in res.stderr
