"""Pre-flight checks from configs alone: the pairing doctor and the memory planner.

Nothing here imports vllm or torch. ``gate`` is what engine-running commands call first.
"""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console

from llama4spec.config import methods
from llama4spec.config.schema import Config
from llama4spec.errors import UserError
from llama4spec.preflight.doctor import CANNOT_START, examine
from llama4spec.preflight.rule import ERROR, Finding, Pairing
from llama4spec.preflight.sources import load

__all__ = ["gate", "pairing", "device_memory_gib", "examine", "Finding", "Pairing"]


def pairing(cfg: Config, network: bool = True) -> Pairing:
    """Both models' config.json for ``cfg`` (the draft where the method table says a draft's config is
    read: an EAGLE head or a draft model); UserError if unreadable."""
    target = load(cfg.target.model, "target.model", network)
    draft = None
    if methods.reads_draft_config(cfg.draft.method) and cfg.draft.model:
        draft = load(cfg.draft.model, "draft.model", network)
    return Pairing(cfg, target, draft)


def device_memory_gib(cfg: Config) -> float:
    """Memory per device: the preset's, or on CPU NUMA node 0's total (what vLLM's CPU build budgets)."""
    if cfg.hardware.memory_gib is not None:
        return cfg.hardware.memory_gib
    meminfo = Path("/sys/devices/system/node/node0/meminfo")
    try:
        for line in meminfo.read_text().splitlines():
            if "MemTotal:" in line:
                return int(line.split()[-2]) * 1024 / 1024**3
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3


def gate(cfg: Config, console: Console, force: bool = False) -> list[Finding]:
    """Run the doctor before an engine starts: print findings; raise UserError on an error unless ``force``."""
    from llama4spec.preflight import findings as render

    found = examine(pairing(cfg))
    errors = [f for f in found if f.severity == ERROR]
    fatal = [f for f in errors if f.rule in CANNOT_START]  # vLLM itself refuses these: --force cannot help
    if fatal:
        raise UserError(*(f"doctor: {f.line()}" for f in fatal))
    shown = [f for f in found if f.severity != "info"]
    if errors and not force:
        raise UserError(*(f"doctor: {f.line()}" for f in errors), "or run anyway with --force")
    if shown:
        render.findings(console, shown)
    if errors:
        console.print(f"[yellow]--force: starting despite {len(errors)} doctor error(s)[/yellow]")
    return found
