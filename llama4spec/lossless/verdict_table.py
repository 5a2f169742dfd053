"""The losslessness check's table (Rich): per temperature the test, the counts, the p-value against
its level, the verdict; the diverging requests below."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from llama4spec.lossless.check import LOSSY


def _p(x: float) -> str:
    return f"{x:.3g}"


def floor(t) -> str:
    """A test's p-value; at the Monte Carlo floor, as a bound."""
    return f"<= {_p(t.p_value)}" if t.draws and t.p_value <= 1 / (1 + t.draws) else _p(t.p_value)


def _verdict(v: str) -> str:
    return f"[bold red]{v}[/bold red]" if v == LOSSY else f"[green]{v}[/green]"


def render(console: Console, record) -> None:
    s = record.settings
    table = Table(title=f"lossless: {record.draft} k={record.lookahead} on {record.target} "
                        f"(joint level {s.level:g}, {record.tests} test{'s' if record.tests != 1 else ''}, "
                        f"Bonferroni)", title_justify="left")
    for column in ("T", "test", "requests", "observed", "expected", "p-value", "level", "verdict"):
        table.add_column(column, justify="right" if column in ("requests", "p-value", "level") else "left")
    g = record.greedy
    if g is not None:
        table.add_row("0", "Fisher", str(g.requests), f"{len(g.diverged)} diverged",
                      f"own: {len(g.baseline_diverged)}", _p(g.p_value), _p(g.level), _verdict(g.verdict))
    for t in record.sampled:
        counts = "/".join(str(n) for n in t.counts)
        expected = "/".join(f"{p:.3g}" for p in t.expected) if t.expected else "no draft"
        table.add_row(f"{t.temperature:g}", "exact" if t.expected else "2-sample", str(t.requests), counts, expected,
                      floor(t), _p(t.level),
                      _verdict(t.verdict))
    console.print(table)
    if record.sampled and record.sampled[0].expected:
        console.print("  observed/expected: " + "/".join(record.sampled[0].categories) + " after the word before "
                      "(exact: the multinomial test against the target's own distribution)", markup=False,
                      highlight=False)
    if g is not None:
        for name, items in (("speculation", g.diverged), ("no draft, other batch shape", g.baseline_diverged)):
            for d in items:
                gap = f"{d.gap:.3g} nats" if d.gap is not None else "unknown"
                wide = " (wide: a defect)" if d in g.wide else ""
                console.print(f"  {name}: request {d.request} differs first at token {d.position}, "
                              f"target's top-2 gap {gap}{wide}", markup=False, highlight=False)
    for t in record.sampled:
        if t.detectable is not None:
            what = "P(successor)" if t.expected else "one token's probability at one position"
            console.print(f"  T={t.temperature:g}: a shift of {what} by {t.detectable:.3f} is found with 80% "
                          f"power at this level ({sum(t.counts)} tokens)", markup=False, highlight=False)
    word = "[bold red]lossy[/bold red]" if record.verdict == LOSSY else "[green]no test rejected losslessness[/green]"
    console.print(f"verdict: {word}")
