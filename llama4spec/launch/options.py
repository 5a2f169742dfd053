"""The options of the commands that run a runbook (``run``, ``sweep``), typed once from argparse:
nothing past the command's own function reads a ``Namespace``."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunOptions:
    runbook: Path | None = None  # `run` only, the file (a shipped runbook's name resolved); `sweep` builds its own
    overrides: tuple[str, ...] = ()
    dry_run: bool = False
    force: bool = False
    runs_dir: Path = Path("runs")
    resume: Path | None = None
    stop_on_error: bool = False
    repeats: int | str | None = None  # a number, or "auto" (sweeps measure until decided)
    warmup: int | None = None
    budget: str | None = None  # the whole run's budget, as given ("2 h", "50 gpu-h"): the runbook's budget: replaced
    json: bool = False  # --dry-run --json: the plan as one JSON document
    fail_on_lossless: bool = False  # `run`: a lossy verdict of a lossless step fails the run
    # server groups (`run` only)
    only_group: str | None = None
    shard: str | None = None
    into: Path | None = None
    parallel: int | None = None
    launcher: str | None = None
    detach: bool = False

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> RunOptions:
        given = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
        if "overrides" in given:
            given["overrides"] = tuple(given["overrides"] or ())
        return cls(**given)
