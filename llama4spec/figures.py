"""The registry of figures: every number of a benchmark that a table, a CSV, a plot, a JSON record
or ``regress`` shows, declared once with its label, unit, direction, format and where it is shown.

Consumers ask the registry (``shown_in``, ``sweep``, ``plotted``, ``regressed``, ``slo_figures``) and
never list figures of their own, so adding a figure to a view is one entry here. The registry's order
is the order of vLLM's result JSON (the run summary and the compare tables list figures in it); the
sweep's tables, its JSON, its points and ``regress`` list theirs by ``column``, the figure's place
among them. The CSVs need no entry: ``sweep.csv`` holds every number of vLLM's result per run
(``result.*``) and ``requests.csv`` each request's own fields.

It sits beneath every layer (it imports nothing of the package): the SLO validation in ``config``
reads the latencies an SLO may bind from it, as the results, analysis and report modules read the
rest.
"""

from __future__ import annotations

from dataclasses import dataclass

# Views: where a figure is shown besides the sweep (``column``).
SUMMARY = "summary"  # a run summary's figures (``BenchRecord.figures``: summary.json, the step lines)
COMPARE = "compare"  # ``compare`` and a single record's table, its Markdown and its JSON ``metrics``
REGRESS = "regress"  # compared new against old by ``regress`` (its table, JSON and gate)

RESULT, ACCEPTANCE = "result", "acceptance"  # where a run's value comes from


@dataclass(frozen=True)
class Plot:
    """A sweep figure drawn against concurrency (medians, 95% intervals as error bars): a PNG."""

    stem: str  # its file (``<stem>.png`` in the sweep's directory) and its key in sweep.json's plots
    title: str  # the picture's title; lower-cased, its caption in report.md and report.html
    axis: str  # the y axis


@dataclass(frozen=True)
class Figure:
    key: str  # vLLM's result key (or the record's own, for acceptance); the JSON key everywhere
    name: str  # in a sentence and a compare row: "output throughput" -> "output throughput (tok/s)"
    unit: str  # "tok/s", "ms", "req/s"; "" for counts and acceptance
    higher_is_better: bool
    fmt: str = ".2f"  # a sweep table's cells
    views: frozenset[str] = frozenset()
    column: int | None = None  # its place among the sweep's figures (tables, sweep.json, points); None: not there
    label: str = ""  # the sweep's wide (Markdown, page) column header
    short: str = ""  # the sweep's narrow (terminal) column header
    row: str = ""  # its row in regress's table and gate lines
    interval_column: bool = False  # the narrow sweep table gives its 95% interval a column of its own
    timed: bool = True  # a time-based figure: carries the between-start term of a noise estimate
    source: str = RESULT  # RESULT: vLLM's result JSON; ACCEPTANCE: the acceptance counters
    # a latency an SLO may bind: (vLLM's --goodput name, its name in a sentence); this figure is the
    # step's median the multipliers of a capacity search scale
    slo: tuple[str, str] | None = None
    plot: Plot | None = None  # a sweep figure drawn against concurrency

    @property
    def title(self) -> str:
        """'output throughput (tok/s)', 'mean TTFT (ms)', 'completed requests'."""
        return f"{self.name} ({self.unit})" if self.unit else self.name


_BOTH = frozenset({SUMMARY, COMPARE})


def _latency(stat: str, metric: str, views: frozenset[str] = _BOTH, **kw) -> Figure:
    """vLLM's ``<stat>_<metric>_ms`` (mean, median or p99 of TTFT, TPOT or ITL): lower is better."""
    return Figure(f"{stat}_{metric}_ms", f"{stat} {metric.upper()}", "ms", False, views=views, **kw)


FIGURES: tuple[Figure, ...] = (
    Figure("request_throughput", "request throughput", "req/s", True, views=_BOTH),
    Figure("output_throughput", "output throughput", "tok/s", True, ".1f", _BOTH | {REGRESS}, column=0,
           label="output tok/s", short="tok/s", row="tok/s", interval_column=True,
           plot=Plot("throughput_vs_concurrency", "Throughput vs concurrency", "output tokens/s (median, 95% interval)")),
    Figure("total_token_throughput", "total token throughput", "tok/s", True, views=_BOTH),
    _latency("mean", "ttft", views=_BOTH | {REGRESS}, column=2, label="TTFT ms", short="TTFT", row="TTFT ms"),
    _latency("median", "ttft", slo=("ttft", "TTFT")),
    _latency("p99", "ttft"),
    _latency("mean", "tpot", views=_BOTH | {REGRESS}, column=1, label="TPOT ms", short="TPOT", row="TPOT ms"),
    _latency("median", "tpot", slo=("tpot", "TPOT")),
    _latency("p99", "tpot"),
    _latency("mean", "itl"),
    _latency("median", "itl"),
    _latency("p99", "itl"),
    Figure("median_e2el_ms", "median E2E", "ms", False, slo=("e2el", "E2E")),
    Figure("completed", "completed requests", "", True, views=frozenset({SUMMARY}), timed=False),
    Figure("failed", "failed requests", "", False, views=frozenset({SUMMARY}), timed=False),
    Figure("acceptance_length", "mean acceptance length", "", True, views=frozenset({REGRESS}), column=3,
           label="accept len", short="acc len", row="acc len", timed=False, source=ACCEPTANCE),
)


def shown_in(view: str) -> tuple[Figure, ...]:
    """The figures a view shows, in the registry's order."""
    return tuple(f for f in FIGURES if view in f.views)


def sweep() -> tuple[Figure, ...]:
    """The sweep's figures (its table columns, sweep.json's rows and intervals, a point's samples)."""
    return tuple(sorted((f for f in FIGURES if f.column is not None), key=lambda f: f.column or 0))


def plotted() -> tuple[tuple[Figure, Plot], ...]:
    """The sweep figures drawn against concurrency, each with its plot, in the sweep's order."""
    return tuple((f, f.plot) for f in sweep() if f.plot is not None)


def regressed() -> tuple[Figure, ...]:
    """The figures ``regress`` compares: sweep figures marked REGRESS, in the sweep's order."""
    return tuple(f for f in sweep() if REGRESS in f.views)


def slo_figures() -> tuple[Figure, ...]:
    """The latencies an SLO may bind, in vLLM's order, each as the median figure of its metric."""
    return tuple(f for f in FIGURES if f.slo is not None)


SLO_METRICS = tuple(f.slo[0] for f in slo_figures())  # vLLM's --goodput names: ttft, tpot, e2el
SLO_NAMES = {f.slo[0]: f.slo[1] for f in slo_figures()}  # ttft -> TTFT
SLO_MEDIANS = {f.slo[0]: f.key for f in slo_figures()}  # ttft -> median_ttft_ms: what an SLO multiplier scales
