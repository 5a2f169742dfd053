# PYTHON_ARGCOMPLETE_OK  (shell completion: eval "$(register-python-argcomplete llama4spec)")
"""The ``llama4spec`` command: a plain list of commands, each module loaded when the parser is
built; heavy imports (vllm, torch) happen only inside the commands that run an engine."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

from llama4spec import __version__
from llama4spec.errors import UserError

# The command modules, in the order `--help` lists them; each has COMMANDS (a list of Command).
MODULES = ["show", "offline", "serving", "run", "sweep", "capacity", "breakeven", "lossless", "calibrate", "report", "compare", "regress", "preflight", "fetch", "cancel", "schema"]
TAKES_OVERRIDES = ("show", "validate", "offline", "serve", "bench", "run", "sweep", "capacity", "breakeven", "lossless", "calibrate", "doctor", "memory", "fetch")


class _Parser(argparse.ArgumentParser):
    commands: dict[str, argparse.ArgumentParser] = {}  # on the top level: each command's parser, by name and alias

    def error(self, message: str) -> None:  # one line and exit 2, like every other user mistake
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:  # said by the command's parser (its name, its --help), naming what it does not know
            command = self.commands.get(getattr(namespace, "command", None) or "", self)
            command.error(unrecognized(extras, command))
        return namespace


class _CommandParser(_Parser):
    """A command's parser: options and operands in any order, as Hydra applications and ``vllm serve``
    take them (``sweep lookahead=1,3 --dry-run bench=random_tiny``). argparse's intermixed parsing,
    applied where the command's own arguments are read (it refuses a parser holding subparsers, so
    not on the top level); an option it does not know is left over, and the top level names it."""

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        if self._intermixing:  # the two passes intermixed parsing makes: plain parsing
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def build_parser() -> argparse.ArgumentParser:
    from llama4spec.cli.common import add_verbosity, groups_help

    parser = _Parser(prog="llama4spec", description="Run and measure EAGLE speculative decoding for Llama 4 on vLLM.")
    parser.commands = {}
    parser.add_argument("--version", action="version", version=f"llama4spec {__version__}")
    add_verbosity(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)
    for name in MODULES:
        for command in importlib.import_module(f"llama4spec.cli.{name}").COMMANDS:
            epilog = command.epilog
            if command.name in TAKES_OVERRIDES:
                epilog = f"{epilog}\n\n{groups_help()}" if epilog else groups_help()
            p = sub.add_parser(command.name, help=command.help, description=command.help, epilog=epilog,
                               aliases=command.aliases, formatter_class=argparse.RawDescriptionHelpFormatter)
            command.arguments(p)
            add_verbosity(p)
            p.set_defaults(command_obj=command)
            parser.commands.update(dict.fromkeys([command.name, *command.aliases], p))
    return parser


def unrecognized(extras: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """What a command does not know, in one line: the options among the leftovers when there are any
    (an override after an unknown option is left over with it, and is not the mistake), each with the
    command's nearest option when one is close (``-dry-run``: did you mean --dry-run?)."""
    import difflib

    flags = [a for a in extras if a.startswith("-") and a != "-"]
    known = [o for o in parser._option_string_actions if o.startswith("--")]
    said = []
    for flag in flags or extras:
        near = difflib.get_close_matches(flag.partition("=")[0], known, n=1, cutoff=0.75) if flag in flags else []
        said.append(f"{flag} (did you mean {near[0]}?)" if near else flag)
    return f"unrecognized arguments: {' '.join(said)}"


def empty_arguments(argv: Sequence[str]) -> list[str]:
    """One line per empty (or blank) argument: no option or operand of any command means anything
    when empty, and a path given as '' would silently become the current directory."""
    out = []
    for i, arg in enumerate(argv):
        option, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        if arg.startswith("--") and not eq:
            continue
        if not value.strip():
            before = option or (argv[i - 1] if i and argv[i - 1].startswith("-") else "")
            out.append(f"{before + ' ' if before else ''}{value!r}: an empty {'value' if before else 'argument'}; "
                       f"give {'a value' if before else 'it a value, or leave it out'}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from llama4spec.cli.common import err, set_verbosity, verbosity_of
    from llama4spec.cli.render import problems

    parser = build_parser()
    if argv is None and "_ARGCOMPLETE" in os.environ:  # the shell asks for completions: answer and exit
        from llama4spec.cli.complete import autocomplete

        autocomplete(parser)
    empty = empty_arguments(sys.argv[1:] if argv is None else list(argv))
    if empty:
        problems(err, empty)
        return 2
    args = parser.parse_args(argv)
    command = getattr(args, "command_obj", None)
    if command is None:
        parser.print_help()
        return 2
    try:
        set_verbosity(verbosity_of(args))
        command.validate(args)
        return command.run(args)
    except UserError as error:
        problems(err, error.problems)
        return 2
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/yellow]")
        return 130
    except OSError as error:  # the system refused a file: a full disk, a permission, a read-only mount
        problems(err, [system_refusal(error)])
        return 1


def system_refusal(error: OSError) -> str:
    """One line for an OSError that reached the command: the file, the system's words, what to do."""
    import errno

    hints = {errno.ENOSPC: "the disk is full: free some space, then run again (a run: with --resume)",
             errno.EDQUOT: "the disk quota is used up: free some space, then run again (a run: with --resume)",
             errno.EROFS: "that file system is read-only: choose another directory",
             errno.EACCES: "no permission there: choose another directory or fix its permissions",
             errno.EPERM: "no permission there: choose another directory or fix its permissions"}
    where = f"{error.filename}: " if error.filename else ""
    hint = hints.get(error.errno, "")
    return f"{where}{error.strerror or error}" + (f"; {hint}" if hint else "")


if __name__ == "__main__":
    sys.exit(main())
