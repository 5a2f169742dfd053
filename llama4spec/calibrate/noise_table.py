"""The calibration's table (Rich): the components with their intervals, df and source, the costs,
the allocation they imply and the A/A check. Everything from noise.json prints as text
(``console``), never as markup."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from llama4spec.stats.design import runs_per_block, runs_per_start, starts_for
from llama4spec.stats.noise import Component
from llama4spec.stats.profile import Profile
from llama4spec.calibrate.record import aa_of
from llama4spec.console import say, text


def _sd(c: Component | None) -> list[str]:
    if c is None:
        return ["-", "-", "-"]
    low, high = c.interval()
    df = "known" if math.isinf(c.df) else f"{c.df:.1f}"
    return [f"{c.sd:.4f}", f"[{low:.4f}, {high:.4f}]" if c.df else "not estimable", df]


def render(console: Console, profile: Profile, path, precision: float = 0.05, verb: str = "written") -> None:
    fp = profile.fingerprint
    table = Table(title=text(f"noise of output throughput (log-sd) on {fp.device} ({fp.device_detail}), "
                             f"vLLM {fp.vllm_version} ({fp.vllm_build}), {fp.target} TP {fp.tensor_parallel_size}, "
                             f"concurrency {fp.concurrency}: {profile.starts} "
                             f"{'blocks' if profile.design == 'back_to_back' else 'starts'} x "
                             f"{profile.runs} runs, {profile.design.replace('_', ' ')}"), title_justify="left")
    for column in ("component", "sd", "95% interval", "df"):
        table.add_column(column, justify="left" if column == "component" else "right")
    table.add_row("between starts", *map(text, _sd(profile.noise.between)))
    table.add_row("within a start", *map(text, _sd(profile.noise.within)))
    if profile.noise.paired is not None:
        table.add_row("paired, within a block", *map(text, _sd(profile.noise.paired)))
    console.print(table)
    pair = profile.design == "back_to_back"
    say(console, f"costs: a {'start pair' if pair else 'server start'} {profile.start_s:.0f} s, a counted run"
                 f"{' pair' if pair else ''} {profile.run_s:.1f} s")
    if profile.design == "back_to_back" and profile.noise.paired is not None:
        say(console, runs_per_block(profile.noise, profile.start_s, profile.run_s).why)
    elif profile.run_s > 0:
        design = runs_per_start(profile.noise, profile.start_s, profile.run_s)
        say(console, design.why)
        say(console, starts_for(profile.noise, precision, design.runs).text())
    say(console, aa_of(profile).sentence())
    say(console, f"{verb}: {path}")
