"""What an offline run shows: the line saying what runs, a spinner while an engine starts, a
progress bar per batch, the engine log's tail after a failure, and the tables (acceptance
statistics, the baseline comparison, the greedy check). Renderers take a Console and return
nothing; ``OfflineDisplay`` is the run's reporter (``offline.outcome.Reporter``) on one console."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from rich.console import Console
from rich.markup import escape

from llama4spec.console import say, styled, text

if TYPE_CHECKING:
    from llama4spec.config.schema import Config
    from llama4spec.offline.prompts import Prompts
    from llama4spec.offline.outcome import Outcome


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def _bar(fraction: float, width: int = 30) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "·" * (width - filled)


def offline_stats(console: Console, stats, label: str) -> None:
    """The figures the original runbook printed by hand, as tables."""
    from rich.table import Table

    run = Table(title=escape(f"offline run: {label}"), show_header=False, title_justify="left")
    run.add_column("figure", style="bold")
    run.add_column("value", justify="right")
    run.add_row("total output tokens", _fmt(stats.total_num_output_tokens))
    run.add_row("wall time (s)", _fmt(stats.wall_time_s, 3))
    run.add_row("output tokens/s", _fmt(stats.output_tokens_per_s, 1))
    c = stats.counters
    if c is not None:
        run.add_row("drafts", _fmt(c.num_drafts))
        run.add_row("draft tokens", _fmt(c.num_draft_tokens))
        run.add_row("draft tokens per draft", _fmt(c.draft_tokens_per_draft, 3))
        run.add_row("accepted tokens", _fmt(c.num_accepted_tokens))
        run.add_row("mean acceptance length", _fmt(c.mean_acceptance_length, 3))
        run.add_row("acceptance rate (overall)", _fmt(c.acceptance_rate, 3))
    console.print(run)
    if c is None:
        return
    counts = (c.accepted_per_pos + [0] * stats.k)[: stats.k]
    if stats.scheduled and not c.lengths_vary:  # later positions drafted only at some batch sizes, steps unread
        pos = Table(title="accepted tokens by draft position (lookahead schedule: counts, not rates)",
                    title_justify="left")
        pos.add_column("position", justify="right")
        pos.add_column("accepted", justify="right")
        for i, count in enumerate(counts):
            pos.add_row(str(i), _fmt(count))
        console.print(pos)
        return
    vary = c.lengths_vary  # then vLLM's rate (over every draft) understates the later positions
    title = ("acceptance by draft position (draft lengths vary; rate: vLLM's figure, accepted / all drafts; "
             "per drafted: accepted / steps that drafted the position, shown in the bar)") if vary \
        else "acceptance by draft position"
    pos = Table(title=title, title_justify="left")
    pos.add_column("position", justify="right")
    pos.add_column("accepted", justify="right")
    pos.add_column("rate", justify="right")
    if vary:
        pos.add_column("drafted", justify="right")
        pos.add_column("per drafted", justify="right")
    pos.add_column("", no_wrap=True)
    drafted = (list(c.drafted_per_pos or []) + [0] * stats.k)[: stats.k]
    given = c.rate_per_drafted_position(stats.k) or [None] * stats.k
    for i, (count, rate) in enumerate(zip(counts, c.rate_per_position(stats.k))):
        if vary:
            shown = given[i]
            pos.add_row(str(i), _fmt(count), f"{rate:.3f}", _fmt(drafted[i]),
                        "-" if shown is None else f"{shown:.3f}", _bar(shown or 0.0, 16))
        else:
            pos.add_row(str(i), _fmt(count), f"{rate:.3f}", _bar(rate))
    console.print(pos)


def offline_comparison(console: Console, spec, base, label: str) -> None:
    from rich.table import Table

    table = Table(title="speculation vs no draft (same prompts)", title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column(label, justify="right")
    table.add_column("no draft", justify="right")
    table.add_column("speedup", justify="right")
    s, b = spec.output_tokens_per_s, base.output_tokens_per_s
    table.add_row("output tokens", _fmt(spec.total_num_output_tokens), _fmt(base.total_num_output_tokens), "")
    table.add_row("wall time (s)", _fmt(spec.wall_time_s, 3), _fmt(base.wall_time_s, 3),
                  f"{base.wall_time_s / spec.wall_time_s:.2f}x" if spec.wall_time_s else "-")
    table.add_row("output tokens/s", _fmt(s, 1), _fmt(b, 1), f"{s / b:.2f}x" if s and b else "-")
    ml = spec.counters.mean_acceptance_length if spec.counters else None
    table.add_row("mean acceptance length", _fmt(ml, 3), "1.000", "")
    console.print(table)


def async_note(console: Console, spec: bool | None, base: bool | None, pinned: str | None) -> None:
    """Whether both sides ran the same scheduler: the pin, or a mismatch named."""
    shown = {True: "on", False: "off", None: "unknown"}
    if pinned:
        console.print(pinned)
    if spec is not None and base is not None and spec != base:
        console.print(f"[yellow]async scheduling differs: {shown[spec]} with the draft, {shown[base]} without[/yellow] "
                      "(the comparison also measures the scheduler)")
    else:
        console.print(f"async scheduling: {shown[spec]} with the draft, {shown[base]} without")


def greedy_check(console: Console, diff, spec_ids, base_ids) -> None:
    if diff is None:
        console.print("[green]greedy outputs identical with and without speculation[/green] "
                      f"({len(spec_ids)} prompts)")
        return
    i, pos = diff
    a = spec_ids[i][pos] if pos < len(spec_ids[i]) else "end"
    b = base_ids[i][pos] if pos < len(base_ids[i]) else "end"
    console.print(f"[red]greedy outputs differ[/red]: prompt {i}, token {pos}: "
                  f"speculation gave {a}, no draft gave {b}")


def by_category(console: Console, stats) -> None:
    """Acceptance by prompt category: ``analysis.categories``' table (category x position)."""
    from llama4spec.analysis.categories import render

    render(console, stats)


def by_temperature(console: Console, runs, k: int, match: bool | None) -> None:
    """Acceptance per temperature of one batch (``offline.temperatures``): vLLM's per-request
    counters summed per temperature, a rate per draft position, and whether the sums equal the
    engine's own counters."""
    from rich.table import Table

    table = Table(title="acceptance by temperature (one batch; vLLM's per-request counters)", title_justify="left")
    for name in ("T", "requests", "drafts", "accepted", "drafted", "acc. length"):
        table.add_column(name, justify="right")
    for i in range(k):
        table.add_column(f"pos {i}", justify="right")
    exact = any(t.expected is not None for t in runs)
    for t in runs:
        c = t.stats.counters
        table.add_row(f"{t.temperature:g}", _fmt(len(t.seeds)), _fmt(c.num_drafts),
                      _fmt(c.num_accepted_tokens), _fmt(c.num_draft_tokens), _fmt(c.mean_acceptance_length, 3),
                      *(f"{r:.3f}" for r in c.rate_per_position(k)))
        if t.expected is not None:
            table.add_row("exact", "", "", "", "", f"{1 + sum(t.expected):.3f}", *(f"{r:.3f}" for r in t.expected),
                          style="dim")
    console.print(table)
    if exact:
        console.print("exact: what this pair gives at that temperature (llama4spec.tiny.spread), from its weights",
                      style="dim", highlight=False)
    if match is False:
        console.print("[yellow]warning[/yellow]: the per-request counters do not add up to the engine's "
                      "counters for this batch; the table above is from the per-request ones")


def _progress(label: str, console: Console | None = None):
    """A Rich progress bar that vLLM drives through its ``use_tqdm`` hook: one per pass. vLLM calls
    the hook twice, around the prompts it renders (an iterable) and for the requests it processes
    (a total); only the second gets a bar, on the run's console."""
    import functools
    import warnings

    from tqdm import TqdmExperimentalWarning
    from tqdm import tqdm as plain_tqdm
    from tqdm.rich import tqdm as rich_tqdm

    warnings.filterwarnings("ignore", category=TqdmExperimentalWarning)

    def make(*args: Any, **kwargs: Any):
        if args or "iterable" in kwargs:  # "Rendering prompts": pass the prompts through, no bar
            return plain_tqdm(*args, **{**kwargs, "disable": True})
        kwargs["desc"] = label
        if console is not None:
            kwargs["options"] = {**kwargs.get("options", {}), "console": console}
        return rich_tqdm(*args, **kwargs)

    return functools.wraps(rich_tqdm)(make)


class OfflineDisplay:
    """An offline run on ``console``: with ``verbosity`` -1 (-q) only the results (the tables, the
    record's path) and a failed engine's log; otherwise also the run's line, a spinner while each
    engine starts and a progress bar per batch."""

    def __init__(self, console: Console, verbosity: int = 0):
        self.console, self.verbosity = console, verbosity

    @property
    def quiet(self) -> bool:
        return self.verbosity < 0

    def header(self, cfg: Config, prompts: Prompts) -> None:
        if self.quiet:
            return
        speculative = cfg.draft.method is not None
        say(self.console, styled(
            ("offline", "bold"), f" target={cfg.target.name} draft={cfg.draft.name}"
            + (f" lookahead={cfg.lookahead}" if speculative else "")
            + f" prompts={len(prompts.texts)} ({prompts.source['kind']}) max_tokens={cfg.generation.max_tokens}"
            + (f" categories={len(prompts.by_category())}" if cfg.offline.by_category else "")
            + (f" temperatures={','.join(f'{t:g}' for t in cfg.offline.temperatures)}"
               if cfg.offline.temperatures else "")))

    def starting(self, label: str) -> contextlib.AbstractContextManager[Any]:
        if self.quiet:
            return contextlib.nullcontext()
        return self.console.status(text(f"starting the vLLM engine ({label})"))

    def progress(self, label: str, category: str) -> Callable[..., Any] | bool:
        if self.quiet:
            return False
        return _progress(f"{label} {escape(category)}".rstrip(), self.console)

    def engine_failed(self, log: Path, tail: list[str]) -> None:
        for line in tail:
            self.console.print(f"  | {line}", markup=False, highlight=False, soft_wrap=True, style="dim")
        self.console.print(f"engine log: {escape(str(log))}", highlight=False, soft_wrap=True)

    def finished(self, outcome: Outcome) -> None:
        spec = outcome.runs[0]
        offline_stats(self.console, spec.stats, spec.label)
        if spec.categories:
            by_category(self.console, outcome.categories)
        if spec.temperatures:
            by_temperature(self.console, spec.temperatures, spec.stats.k, spec.requests_match_counters)
        if len(outcome.runs) > 1:
            base = outcome.runs[1]
            offline_comparison(self.console, spec.stats, base.stats, spec.label)
            async_note(self.console, spec.async_scheduling, base.async_scheduling, outcome.pinned)
            if outcome.identical is not None:
                greedy_check(self.console, outcome.difference, spec.token_ids, base.token_ids)

    def recorded(self, path: Path) -> None:
        self.console.print(f"run record: [bold]{escape(str(path))}[/bold]")
