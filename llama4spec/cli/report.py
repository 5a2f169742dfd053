"""``report``: a run's reports rebuilt from its records alone, or several runs merged."""

from __future__ import annotations

import argparse
from pathlib import Path

from llama4spec.cli.common import Command, out
from llama4spec.cli.paths import check_output_dir


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                   help="run directories (runs/<runbook>/<timestamp>); their group runs under groups/ are included")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="where the merged run goes (needed with several RUN_DIRs; default: the one RUN_DIR, rebuilt "
                        "in place)")


def _validate(args: argparse.Namespace) -> None:
    from llama4spec.runbook import write_page as page

    if args.out is not None:
        check_output_dir(args.out, "--out")
        page.target(args.out)
    elif len(args.run_dirs) == 1 and args.run_dirs[0].is_dir():  # rebuilt in place
        check_output_dir(args.run_dirs[0], "RUN_DIR")
        page.target(args.run_dirs[0])


def _run(args: argparse.Namespace) -> int:
    from llama4spec.runbook import write_page as page
    from llama4spec.runbook.merge import rebuild

    from llama4spec.errors import UserError

    target = args.out or args.run_dirs[0]
    try:
        code = rebuild(list(args.run_dirs), args.out, out)
        html = page.write(target)
    except OSError as err:
        raise UserError(f"cannot write the report: {err.strerror or err} ({err.filename or target}); "
                        f"give --out a directory you can write to") from None
    out.print(f"summary: {target / 'summary.md'}", markup=False, highlight=False, soft_wrap=True)
    out.print(f"report: {html}", markup=False, highlight=False, soft_wrap=True)
    if code:
        out.print("some points have no counted record (see 'not measured' above); --resume the run to measure them",
                  markup=False, highlight=False, soft_wrap=True)
    return code


COMMANDS = [Command(
    "report", "rebuild a run's sweep reports, tables, plots, summary and report.html from its records (no engine); "
              "merge runs",
    _arguments, _run, _validate,
    examples=["llama4spec report runs/tiny_cpu_sweep/TIMESTAMP",
              "llama4spec report runs/tiny_cpu_sweep/A runs/tiny_cpu_sweep/B --out runs/tiny_cpu_sweep/merged"])]
