"""The losslessness check's table (Rich): per temperature each test, the counts against what the
reference expects, the p-value against its level, the verdict; the diverging requests and every
test's power line below (``verdict_lines``)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from llama4spec.console import text
from llama4spec.lossless.check import CONTEXT, LOSSY
from llama4spec.lossless.verdict_lines import power


def _p(x: float) -> str:
    return f"{x:.3g}"


def floor(t) -> str:
    """A test's p-value; at the Monte Carlo floor, as a bound."""
    return f"<= {_p(t.p_value)}" if t.draws and t.p_value <= 1 / (1 + t.draws) else _p(t.p_value)


def _verdict(v: str) -> str:
    return f"[bold red]{v}[/bold red]" if v == LOSSY else f"[green]{v}[/green]"


def _t(t) -> str:
    s = t.sampling or {}
    extra = ([f"p={s['top_p']:g}"] if s.get("top_p", 1) < 1 else []) + ([f"k={s['top_k']}"] if s.get("top_k", -1) > 0 else [])
    return " ".join([f"{t.temperature:g}", *extra])


def _shares(values) -> str:
    return "/".join(f"{p:.3g}" for p in values)


def render(console: Console, record) -> None:
    s = record.settings
    table = Table(title=text(f"lossless: {record.draft} k={record.lookahead} on {record.target} "
                             f"(joint level {s.level:g}, {record.tests} test{'s' if record.tests != 1 else ''}, "
                             f"Bonferroni)"), title_justify="left")
    for column in ("T", "test", "requests", "observed", "expected", "control", "p-value", "level", "verdict"):
        table.add_column(column, justify="right" if column in ("requests", "p-value", "level") else "left")
    g = record.greedy
    if g is not None:
        table.add_row("0", "Fisher", str(g.requests), f"{len(g.diverged)} diverged", "-",
                      f"{len(g.baseline_diverged)} diverged", _p(g.p_value), _p(g.level), _verdict(g.verdict))
    for t in record.sampled:
        counts = "/".join(str(n) for n in t.counts)
        context = t.test == CONTEXT
        n = sum(t.counts)
        expected = _shares([e * n for e in t.expected]) if context and t.expected else _shares(t.expected or [])
        control = "/".join(str(c) for c in t.control.get("counts", [])) if context else "-"
        table.add_row(_t(t), "context" if context else "exact", str(t.requests), counts, expected, control,
                      floor(t), _p(t.level), _verdict(t.verdict))
    console.print(table)
    if record.sampled:
        console.print("  observed/expected: context, the tokens at the target's top-1/top-2/rest where each was "
                      "emitted (expected: summed from the target's processed probabilities; control: the same "
                      "requests without the draft); exact, successor/second/other after the word before",
                      markup=False, highlight=False)
    if g is not None:
        for name, items in (("speculation", g.diverged), ("no draft, other batch shape", g.baseline_diverged)):
            for d in items:
                gap = f"{d.gap:.3g} nats" if d.gap is not None else "unknown"
                wide = " (wide: a defect)" if d in g.wide else ""
                console.print(f"  {name}: request {d.request} differs first at token {d.position}, "
                              f"target's top-2 gap {gap}{wide}", markup=False, highlight=False)
    from llama4spec.lossless.check import as_dict

    for t in record.sampled:
        console.print(f"  T={_t(t)} {'context' if t.test == CONTEXT else 'exact'}: {power(as_dict(t))}",
                      markup=False, highlight=False)
    word = "[bold red]lossy[/bold red]" if record.verdict == LOSSY else "[green]no test rejected losslessness[/green]"
    console.print(f"verdict: {word}")
