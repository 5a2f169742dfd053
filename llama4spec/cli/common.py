"""What every command shares: the consoles, the overrides argument, composing, the doctor gate,
printing log tails. Only the CLI layer and renderers print."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from rich.console import Console

# -q/--quiet and -v/--verbose (on the top-level parser and on every command): set once per command
# with set_verbosity, read with current_verbosity; the one setting lives in runbook.progress
from llama4spec.runbook.progress import NORMAL, QUIET, VERBOSE, current_verbosity, set_verbosity

out = Console()
err = Console(stderr=True)
RUNS_DIR = Path("runs")
OVERRIDES_HELP = ("Hydra overrides (group=option or key=value), e.g. target=llama4_scout draft=eagle_llama4_scout "
                  "lookahead=5; your own config directories: hydra.searchpath=[file://DIR]")


def add_settings_flags(p: argparse.ArgumentParser, settings_type: type) -> dict[str, str]:
    """One flag per setting of a feature's settings dataclass that offers one (``runbook.fields.described``):
    ``--start-rate`` for ``start_rate``, its type and choices from the field, its help with the default
    and bounds the field declares. Left out, a flag is None (the setting keeps its default). Returns
    setting -> flag."""
    hints = typing.get_type_hints(settings_type)
    flags = {}
    for f in dataclasses.fields(settings_type):
        meta = f.metadata
        if not meta.get("flag"):
            continue
        flags[f.name] = flag = flag_of(f.name)
        kind = next(t for t in typing.get_args(hints[f.name]) or (hints[f.name],) if t is not type(None))
        said = [f"default {_shown(f.default)}"] if f.default is not None else []
        if said and meta.get("high") not in (None, f.default):
            said.append(f"at most {_shown(meta['high'])}")
        text = meta["help"] + (f" ({', '.join(said)})" if said else "")
        p.add_argument(flag, type=kind, choices=meta.get("choices"), metavar=meta.get("metavar"),
                       help=text.replace("%", "%%"))
    return flags


def flag_of(setting: str) -> str:
    """The command line's flag for a setting: --start-rate for start_rate."""
    return "--" + setting.replace("_", "-")


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass
class Command:
    """One subcommand: its arguments, a validate step (checks that start nothing), a run step."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    validate: Callable[[argparse.Namespace], None] = lambda args: None
    examples: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)

    @property
    def epilog(self) -> str:
        return "examples:\n" + "\n".join(f"  {e}" for e in self.examples) if self.examples else ""


def add_verbosity(p: argparse.ArgumentParser, top: bool = False) -> None:
    """-v/--verbose and -q/--quiet. On a command they default to unset, so that ``llama4spec -v run
    X`` and ``llama4spec run X -v`` mean the same."""
    default = False if top else argparse.SUPPRESS
    group = p.add_mutually_exclusive_group()
    group.add_argument("-v", "--verbose", action="store_true", default=default,
                       help="stream server and benchmark logs live and show vLLM's warnings")
    group.add_argument("-q", "--quiet", action="store_true", default=default,
                       help="print only results and errors: no spinners, no step progress (for CI)")


def verbosity_of(args: argparse.Namespace) -> int:
    """QUIET, NORMAL or VERBOSE from parsed arguments; -q with -v (one before the command, one
    after it) is refused."""
    from llama4spec.errors import UserError

    verbose, quiet = getattr(args, "verbose", False), getattr(args, "quiet", False)
    if verbose and quiet:
        raise UserError("-q/--quiet and -v/--verbose exclude each other; give one")
    return VERBOSE if verbose else QUIET if quiet else NORMAL


def groups_help() -> str:
    """Every config group and its options, for the help of commands that take overrides."""
    from llama4spec.config.compose import group_options
    from llama4spec.config.conf_dirs import GROUPS, TARGET_DEFAULTS

    lines = ["config groups (group=option):"]
    for group in GROUPS:
        default = " (default: the target's own)" if group in TARGET_DEFAULTS else ""
        lines.append(f"  {group}: {', '.join(group_options(group))}{default}")
    return "\n".join(lines)


def add_overrides(p: argparse.ArgumentParser, help: str = OVERRIDES_HELP) -> None:
    p.add_argument("overrides", nargs="*", help=help)


def compose(overrides: Sequence[str], check: bool = True):
    """The composed config; with ``check`` every validation problem at once as one UserError."""
    from llama4spec.config.compose import compose_config, compose_valid

    return compose_valid(overrides) if check else compose_config(overrides)


def gate(force: bool) -> Callable:
    """The doctor's gate for the executor: run before an engine step starts, once per step."""

    def check(composed, step: str) -> None:
        from llama4spec.preflight import gate as doctor_gate

        with out.capture() as captured:
            doctor_gate(composed.cfg, out, force=force)
        findings = captured.get()
        if findings.strip():
            out.file.write(findings)

    return check


def note(text: str) -> None:
    """A progress line (what is about to happen): like ``say``, and not printed with -q."""
    if current_verbosity() > QUIET:
        say(text)


def say(text: str, style: str | None = None) -> None:
    """Print text that may hold user input (paths, names): never read as markup."""
    from llama4spec.launch.job_table import say as say_on

    say_on(out, text, style)


def repeats_value(text: str) -> int | str:
    """--repeats: a whole number, or auto."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number or auto") from None
