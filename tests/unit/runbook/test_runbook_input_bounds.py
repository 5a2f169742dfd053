"""Every bad runbook input is refused in one readable line per problem (exit 2): never a traceback,
a hang or a memory blow-up. Sizes, depth, aliases, sweep points and override lengths are bounded
before anything large is built."""

from __future__ import annotations

import os
import random
import tracemalloc
from pathlib import Path

import pytest

from llama4spec.runbook import matrix as matrix_mod
from llama4spec.runbook import schema, yamlsafe
from llama4spec.runbook.spec import Runbook
from llama4spec.runbook.steps import make as make_step
TIMEOUT = 20  # each case finishes in about a second; a hang or an alias bomb would not


def _write(tmp_path: Path, text: str | bytes, name: str = "rb.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _refused(done, *words: str) -> list[str]:
    """Exit 2, only `error:` lines (at least one), one of them with every word, no traceback."""
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert done.returncode == 2, output
    lines = done.stderr.strip().splitlines()
    assert lines and all(line.startswith("error: ") for line in lines), output
    assert any(all(w in line for w in words) for line in lines), output
    return lines


def _run(cli, path: Path | str, *extra: str):
    return cli("run", str(path), "--dry-run", *extra, timeout=TIMEOUT)


BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
description: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
name: bomb
steps: [{id: s, kind: serve}]
"""


# -- bounded input -------------------------------------------------------------------------------
def test_alias_bomb_is_refused_in_one_line(cli, tmp_path: Path) -> None:
    lines = _refused(_run(cli, _write(tmp_path, BOMB)), "expands to more than 100,000 values", "line 6")
    assert len(lines) == 1


def test_alias_bomb_never_builds_the_expansion(tmp_path: Path) -> None:
    path = _write(tmp_path, BOMB)
    tracemalloc.start()
    try:
        runbook, problems = schema.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert runbook is None and len(problems) == 1 and "anchors and aliases" in problems[0]
    assert peak < 20 * 2**20, f"loading a 500-byte file peaked at {peak / 2**20:.0f} MiB"


def test_dev_zero_is_not_read(cli) -> None:
    lines = _refused(_run(cli, "/dev/zero"), "/dev/zero", "not a regular file")
    assert len(lines) == 1


def test_fifo_is_not_opened(cli, tmp_path: Path) -> None:
    fifo = tmp_path / "rb.yaml"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    _refused(_run(cli, fifo), "not a regular file")


def test_directory_is_one_line(cli, tmp_path: Path) -> None:
    lines = _refused(_run(cli, tmp_path), "is a directory")
    assert len(lines) == 1


def test_fifty_megabyte_file_is_refused_unread(cli, tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("w") as f:
        f.write("name: big\nsteps: [{id: s, kind: serve}]\ndescription: |\n")
        line = "  " + "x" * 98 + "\n"
        for _ in range(50):
            f.write(line * 10_000)  # 1 MB at a time: 50 MB in all
    assert path.stat().st_size > 50_000_000
    lines = _refused(_run(cli, path), "larger than 1,024 KiB")
    assert len(lines) == 1


def test_a_file_at_the_cap_is_still_read(cli, tmp_path: Path) -> None:
    head = "name: ok\nsteps: [{id: s, kind: nope}]\ndescription: |\n"
    body = ("  " + "x" * 97 + "\n") * ((yamlsafe.MAX_BYTES - len(head)) // 100)
    path = _write(tmp_path, head + body)
    assert path.stat().st_size <= yamlsafe.MAX_BYTES
    _refused(_run(cli, path), "kind 'nope' is not one of")  # read and parsed: the step's own problem


# -- binary, undecodable, nested -------------------------------------------------------------------
def test_binary_garbage_is_one_line(cli, tmp_path: Path) -> None:
    rng = random.Random(0)
    path = _write(tmp_path, bytes(rng.randrange(256) for _ in range(4096)))
    lines = _refused(_run(cli, path), "not UTF-8 text")
    assert len(lines) == 1


def test_invalid_utf8_names_the_line(cli, tmp_path: Path) -> None:
    path = _write(tmp_path, b"name: x\nsteps: [{id: s, kind: serve}]\ndescription: caf\xe9\n")
    _refused(_run(cli, path), "not UTF-8 text", "byte 0xe9", "line 3")


def test_control_characters_are_one_line(cli, tmp_path: Path) -> None:
    path = _write(tmp_path, "name: x\nsteps: [{id: s, kind: serve}]\ndescription: a\x00b\x07\n")
    _refused(_run(cli, path), "not a text file", "line 3")


def test_ten_thousand_deep_nesting_is_one_line(cli, tmp_path: Path) -> None:
    path = _write(tmp_path, "name: deep\nsteps: [{id: s, kind: serve}]\ndescription: " + "[" * 10_000 + "]" * 10_000 + "\n")
    lines = _refused(_run(cli, path), "nested more than 64 levels", "line 3")
    assert len(lines) == 1


def test_deep_block_nesting_is_one_line(cli, tmp_path: Path) -> None:
    text = "name: deep\nsteps: [{id: s, kind: serve}]\ndescription:\n" + "".join(
        " " * i + f"k{i}:\n" for i in range(1, 1000)) + " " * 1000 + "end: 1\n"
    _refused(_run(cli, _write(tmp_path, text)), "nested more than 64 levels")


@pytest.mark.parametrize("text,words", [
    ("name: x\nsteps: [a, : b\n  - c\n", ["not valid YAML at line 2"]),
    ("name: x\n\tsteps: []\n", ["not valid YAML at line 2"]),
    ("name: !!python/object/apply:os.system [echo hi]\nsteps: []\n", ["line 1", "python/object/apply"]),
    ("name: x\nsteps: [{id: s, kind: serve}]\ndescription: 2001-02-30\n", ["line 3", "cannot read the value"]),
    ("name: x\nsteps: [{id: s, kind: serve}]\ndescription: " + "1" * 5000 + "\n", ["line 3", "cannot read the value"]),
    ("name: x\nsteps: [{id: s, kind: serve}]\ndescription: &a [1, *a]\n", ["line 3", "inside the value it names"]),
    ("name: x\nsteps: [{id: s, kind: serve}]\ndescription: *nope\n", ["line 3", "undefined alias"]),
    ("name: x\nsteps: [{id: s, kind: serve}]\n---\nname: y\n", ["not valid YAML at line 3"]),
    ("name: x\nsteps: [{id: s, kind: serve}]\n? [a, b]\n: c\n", ["not valid YAML at line 3", "unhashable"]),
])
def test_every_yaml_error_is_one_line_with_its_line(tmp_path: Path, text: str, words: list[str]) -> None:
    runbook, problems = schema.load(_write(tmp_path, text))
    assert runbook is None and len(problems) == 1, problems
    assert "\n" not in problems[0] and all(w in problems[0] for w in words), problems


# -- duplicate keys --------------------------------------------------------------------------------
def test_duplicate_keys_are_an_error_naming_key_and_line(cli, tmp_path: Path) -> None:
    path = _write(tmp_path, "name: x\nsteps: [{id: s, kind: serve}]\nname: y\n")
    lines = _refused(_run(cli, path), "key 'name' is repeated", "line 3", "first at line 1")
    assert len(lines) == 1


def test_duplicate_keys_inside_a_step(cli, tmp_path: Path) -> None:
    path = _write(tmp_path, "name: x\nsteps:\n  - id: s\n    kind: serve\n    id: t\n")
    _refused(_run(cli, path), "key 'id' is repeated", "line 5")


def test_merge_keys_may_still_override(tmp_path: Path) -> None:
    text = ("name: x\nenv:\n  <<: &base {A: '1', B: '2'}\n  B: '3'\n"
            "steps: [{id: s, kind: stop, server: s2}, {id: s2, kind: serve}]\n")
    runbook, problems = schema.load(_write(tmp_path, text))
    assert runbook is not None and runbook.env == {"A": "1", "B": "3"}
    assert not problems


# -- env -------------------------------------------------------------------------------------------
def test_env_null_is_refused_naming_the_key(cli, tmp_path: Path) -> None:
    path = _write(tmp_path, "name: x\nenv:\n  FOO: null\n  BAR: ~\nsteps: [{id: s, kind: serve}]\n")
    lines = _refused(_run(cli, path), "env FOO is null")
    assert any("env BAR is null" in line for line in lines)


@pytest.mark.parametrize("entry,words", [
    ("FOO: [1, 2]", ["env FOO is a list"]),
    ("FOO: {a: 1}", ["env FOO is a mapping"]),
    ("FOO: yes", ["env FOO is a boolean", "quote"]),
    ('"BAD NAME": x', ["env name 'BAD NAME' is not a variable name"]),
    ('"1ABC": x', ["env name '1ABC' is not a variable name"]),
    ("12: x", ["env name 12 is not a variable name"]),
    ('FOO: "a\\0b"', ["env FOO contains a NUL"]),
])
def test_env_values_are_text_and_names_are_names(cli, tmp_path: Path, entry: str, words: list[str]) -> None:
    path = _write(tmp_path, f"name: x\nenv:\n  {entry}\nsteps: [{{id: s, kind: serve}}]\n")
    _refused(_run(cli, path), *words)


def test_env_numbers_become_text(tmp_path: Path) -> None:
    text = "name: x\nenv: {N: 1, F: 1.5, S: text, E: ''}\nsteps: [{id: s, kind: serve}]\n"
    runbook, problems = schema.load(_write(tmp_path, text))
    assert not problems and runbook.env == {"N": "1", "F": "1.5", "S": "text", "E": ""}


# -- sweeps ----------------------------------------------------------------------------------------
def test_million_point_matrix_fails_fast_with_count_and_cap(cli, tmp_path: Path) -> None:
    axes = {
        "lookahead": list(range(1, 11)),
        "memory.max_num_seqs": list(range(1, 11)),
        "memory.max_model_len": [256 * i for i in range(1, 11)],
        "bench.max_concurrency": list(range(1, 11)),
        "bench.num_prompts": list(range(1, 11)),
        "serve.port": list(range(8001, 8011)),
    }
    body = "".join(f"      {k}: {v}\n" for k, v in axes.items())
    path = _write(tmp_path, f"name: big\nsteps:\n  - id: sw\n    kind: sweep\n    matrix:\n{body}")
    lines = _refused(_run(cli, path), "1,000,000 combinations", "10 x 10 x 10 x 10 x 10 x 10", "at most 1,000")
    assert len(lines) == 1


def test_points_of_all_sweeps_count_together(tmp_path: Path) -> None:
    sweep = "  - {{id: {}, kind: sweep, matrix: {{bench.num_prompts: {}}}}}\n"
    values = list(range(1, 601))
    path = _write(tmp_path, "name: two\nsteps:\n" + sweep.format("a", values) + sweep.format("b", values))
    runbook, problems = schema.load(path)
    assert len(problems) == 1 and all(w in problems[0] for w in ("step 'b'", "1,200 points together", "1,000"))
    assert runbook is None  # refused before planning: a plan would compose sweep a's 600 bench steps first


def test_matrix_values_are_printable_and_short(cli, tmp_path: Path) -> None:
    long = "x" * 300
    path = _write(tmp_path, f'name: m\nsteps:\n  - {{id: sw, kind: sweep, matrix: {{target.model: ["a\\nb", {long}]}}}}\n')
    _refused(_run(cli, path), "matrix 'target.model'", "control character")


def test_sweep_composes_once_per_server_and_ids_stay_unique(monkeypatch) -> None:
    from llama4spec.config.compose import compose_config

    servers = {f"lookahead={k}": compose_config(["target=tiny", "draft=tiny_eagle", f"lookahead={k}"]) for k in "1234"}
    calls: list[list[str]] = []

    def counting(overrides):
        calls.append(list(overrides))
        return servers[next(o for o in overrides if o.startswith("lookahead="))]

    monkeypatch.setattr(matrix_mod, "compose_config", counting)
    step = make_step("sweep", "sw", matrix={
        "lookahead": ["1", "2", "3", "4"],
        "bench.max_concurrency": [str(c) for c in range(1, 51)],
        "bench.num_prompts": ["1", "2", "3", "4", "5"],
    })
    runbook = Runbook(name="x", path=Path("x.yaml"), steps=[step])
    problems: list[str] = []
    expanded = matrix_mod.expand(runbook, [], problems, make_step)
    assert len(calls) == 4  # one composition per server-side combination, none per client point
    ids = [s.id for s in expanded.steps]
    assert len(ids) == len(set(ids))
    assert len(expanded.step("sw").expanded.points) == 1_000
    assert expanded.step(ids[500]).id == ids[500]


def test_generated_ids_are_bounded(monkeypatch) -> None:
    from llama4spec.config.compose import compose_config

    composed = compose_config(["target=tiny"])
    monkeypatch.setattr(matrix_mod, "compose_config", lambda overrides: composed)
    step = make_step("sweep", "sw", matrix={"target.model": ["/m/" + "a" * 190, "/m/" + "b" * 190]})
    expanded = matrix_mod.expand(Runbook(name="x", path=Path("x.yaml"), steps=[step]), [], [], make_step)
    assert all(len(s.id) <= matrix_mod.MAX_GENERATED_ID and s.id.isascii() for s in expanded.steps)
    assert len({s.id for s in expanded.steps}) == len(expanded.steps)


# -- overrides -------------------------------------------------------------------------------------
def test_every_bad_override_is_reported_at_once(cli) -> None:
    done = cli("validate", "lookahead=x", "memory.nope=1", "draft=unknown", timeout=TIMEOUT)
    lines = _refused(done, "lookahead=x", "Integer")
    assert len(lines) == 3
    assert any("unknown config key 'memory.nope'" in line for line in lines)
    assert any("unknown draft option 'unknown'" in line for line in lines)


def test_unparsable_and_unknown_overrides_together(cli) -> None:
    done = cli("validate", "lookahead=[", "a b", "memory.nope=1", "serve.port=x", timeout=TIMEOUT)
    lines = _refused(done, "cannot parse override 'lookahead=['")
    assert any("cannot parse override 'a b'" in line and "position 2" in line for line in lines)
    assert any("memory.nope" in line for line in lines) and any("serve.port" in line for line in lines)
    assert len(lines) == 4


def test_an_override_with_a_newline_is_one_line(cli) -> None:
    _refused(cli("validate", "lookahead=\n3", timeout=TIMEOUT), "cannot parse override 'lookahead=\\n3'")


def test_a_long_override_is_refused_before_parsing(cli, tmp_path: Path) -> None:
    # Hydra's parser needs minutes for a list of 100,000 characters; this must not reach it.
    long = "serve.extra_args=[" + ",".join(["a"] * 50_000) + "]"
    path = _write(tmp_path, f"name: x\noverrides: ['{long}']\nsteps: [{{id: s, kind: serve}}]\n")
    _refused(_run(cli, path), "overrides: item 1", "100,018 characters long", "at most 1,000")
    _refused(cli("validate", long, timeout=TIMEOUT), "100,018 characters long")


def test_runbook_overrides_report_every_problem(cli, tmp_path: Path) -> None:
    path = _write(tmp_path, "name: x\noverrides: [lookahead=x, draft=unknown]\nsteps: [{id: s, kind: serve}]\n")
    lines = _refused(_run(cli, path), "step 's'", "lookahead=x")
    assert any("unknown draft option 'unknown'" in line for line in lines)


# -- user strings that become paths or argv ---------------------------------------------------------
@pytest.mark.parametrize("step,words", [
    ('{id: "s\\n", kind: serve}', ["'id' must be a name", "s\\n"]),
    ('{id: "../up", kind: serve}', ["'id' must be a name"]),
    ("{id: " + "s" * 65 + ", kind: serve}", ["at most 64 characters"]),
    ('{id: b, kind: bench, url: "http://127.0.0.1:1", label: "a\\tb"}', ["label 'a\\tb'", "control character"]),
    ('{id: b, kind: bench, url: "http://127.0.0.1:1", label: "' + "l" * 101 + '"}', ["label", "at most 100"]),
    ('{id: b, kind: bench, url: "http://127.0.0.1:1", label: "--port"}', ["label '--port'", "starts with '-'"]),
    ('{id: b, kind: bench, url: "http://127.0.0.1:1", label: [a]}', ["'label' must be a short text"]),
    ("{id: t, kind: stop, server: 5}", ["'server' must be a non-empty string"]),
    ('{id: s, kind: serve, needs: ["a\\nb"]}', ["needs: item 1", "control character"]),
    ('{id: s, kind: serve, overrides: ["lookahead=1\\n"]}', ["overrides: item 1", "control character"]),
])
def test_user_strings_are_checked(cli, tmp_path: Path, step: str, words: list[str]) -> None:
    path = _write(tmp_path, f"name: x\nsteps: [{step}]\n")
    _refused(_run(cli, path), *words)


def test_runbook_name_is_a_safe_directory_name(cli, tmp_path: Path) -> None:
    path = _write(tmp_path, 'name: "x\\n"\nsteps: [{id: s, kind: serve}]\n')
    _refused(_run(cli, path), "name 'x\\n' must be letters")
