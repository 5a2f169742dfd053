"""Options and overrides in any order, for every command that takes overrides, as Hydra applications
and ``vllm serve`` take them (``sweep lookahead=1,3 --dry-run bench=random_tiny``); an unknown option
among them is still one line naming it (and the command's option it is nearest to)."""

from __future__ import annotations

from pathlib import Path

import argparse

import pytest

from llama4spec.cli.main import TAKES_OVERRIDES, build_parser

PARSER = build_parser()
COMMANDS = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction)).choices
WITH_OVERRIDES = sorted(name for name, p in COMMANDS.items() if any(a.dest == "overrides" for a in p._actions))
WITH_DRY_RUN = [name for name in WITH_OVERRIDES if "--dry-run" in COMMANDS[name]._option_string_actions]
NEEDS = {"run": ["runbooks/x.yaml"], "bench": ["--url", "http://127.0.0.1:8000"]}  # a command's own operands


def test_every_command_that_takes_overrides_is_here() -> None:
    aliases = {"plan"}  # memory's
    assert set(WITH_OVERRIDES) - aliases == set(TAKES_OVERRIDES)
    assert {"sweep", "lossless", "run", "calibrate", "capacity", "breakeven", "serve", "fetch"} <= set(WITH_DRY_RUN)


@pytest.mark.parametrize("name", WITH_OVERRIDES)
def test_overrides_on_both_sides_of_an_option(name: str) -> None:
    args = PARSER.parse_args([name, *NEEDS.get(name, []), "lookahead=2", "-q", "draft=none", "serve.port=8811"])
    assert args.overrides == ["lookahead=2", "draft=none", "serve.port=8811"] and args.quiet


@pytest.mark.parametrize("name", WITH_DRY_RUN)
def test_overrides_on_both_sides_of_dry_run(name: str) -> None:
    args = PARSER.parse_args([name, *NEEDS.get(name, []), "lookahead=1,3", "--dry-run", "bench=random_tiny"])
    assert args.overrides == ["lookahead=1,3", "bench=random_tiny"] and args.dry_run


def test_run_takes_its_runbook_after_an_option() -> None:
    args = PARSER.parse_args(["run", "--dry-run", "runbooks/x.yaml", "lookahead=2", "-q", "draft=none"])
    assert (args.runbook, args.overrides, args.dry_run) == (Path("runbooks/x.yaml"), ["lookahead=2", "draft=none"], True)


def test_offline_as_people_type_it() -> None:
    args = PARSER.parse_args(["offline", "draft=none", "-q", "lookahead=2", "--json", "out.json", "dataset.num_prompts=4"])
    assert args.overrides == ["draft=none", "lookahead=2", "dataset.num_prompts=4"] and args.json == Path("out.json")


def test_other_commands_take_their_operands_in_any_order_too() -> None:
    args = PARSER.parse_args(["compare", "a.json", "--json", "b.json"])
    assert (args.baseline, args.candidate, args.json) == (Path("a.json"), Path("b.json"), True)


def test_sweep_dry_run_with_overrides_after_the_option(cli, tmp_path: Path) -> None:
    res = cli("sweep", "lookahead=1,3", "--dry-run", "serve.port=8812", "--runs-dir", str(tmp_path), "bench=random_tiny")
    assert res.returncode == 0, res.stderr
    assert "overrides for every step: serve.port=8812 bench=random_tiny" in res.stdout
    assert "--port 8812" in res.stdout


def test_lossless_dry_run_with_overrides_after_the_option(cli, tmp_path: Path) -> None:
    res = cli("lossless", "lookahead=2", "--dry-run", "serve.port=8813", "--runs-dir", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "overrides: lookahead=2 serve.port=8813" in res.stdout


def test_validate_with_overrides_after_the_option(cli) -> None:
    res = cli("validate", "lookahead=2", "-q", "lookahead=0")  # the later override is read, and refused
    assert res.returncode == 2 and "lookahead" in res.stderr and "Traceback" not in res.stderr
    assert cli("validate", "lookahead=2", "-q", "bench=random_tiny").returncode == 0


@pytest.mark.parametrize("argv,named,near", [
    (["sweep", "lookahead=1,3", "-dry-run", "bench=random_tiny"], "-dry-run", "--dry-run"),
    (["validate", "lookahead=2", "--jsn", "draft=none"], "--jsn", "--json"),
    (["offline", "draft=none", "--forse", "lookahead=2"], "--forse", "--force"),
    (["lossless", "lookahead=2", "--dryrun=true"], "--dryrun=true", "--dry-run"),
])
def test_an_option_typo_among_overrides_is_one_line_naming_it(cli, argv: list[str], named: str, near: str) -> None:
    res = cli(*argv)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert f"llama4spec {argv[0]}: error: unrecognized arguments: {named} (did you mean {near}?)" in res.stderr
    assert argv[-1] not in res.stderr.replace(named, "")  # the override after it is not the mistake


def test_an_unknown_operand_is_named() -> None:
    from llama4spec.cli.main import unrecognized

    assert unrecognized(["c.json"], COMMANDS["compare"]) == "unrecognized arguments: c.json"
