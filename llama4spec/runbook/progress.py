"""What the executor shows while a plan runs: step lines, a live spinner while a server starts
(elapsed time and the phase read from its log) or a benchmark runs (requests finished out of the
total), a sweep's "point n of N" with the time left; ``-v`` streams the logs, ``-q`` shows none
of it (results and errors only).

The executor owns the console and hands this object's callbacks to the process owners
(``Server.start(on_phase=, on_line=)``, ``run_bench(on_progress=, on_line=)``), which never print.
"""

from __future__ import annotations

import contextlib
import time
from statistics import mean
from typing import Any, Callable, Iterator, Sequence

from rich.console import Console
from rich.text import Text

# The verbosity levels (-q/--quiet, neither, -v/--verbose) and the one setting of them: the CLI sets
# it once per command, before anything runs; its own output and every progress display follow it.
QUIET, NORMAL, VERBOSE = -1, 0, 1
_setting = {"verbosity": NORMAL}
PLAIN_COUNT_EVERY_S = 15.0  # without a terminal, a benchmark's count is printed at most this often


def set_verbosity(level: int) -> None:
    _setting["verbosity"] = level


def current_verbosity() -> int:
    return _setting["verbosity"]


# -- pure arithmetic ------------------------------------------------------------------------------
def eta_s(durations: Sequence[float], remaining: int) -> float | None:
    """Seconds left for ``remaining`` points at the mean duration of the finished ones; None
    before any has finished."""
    if not durations or remaining <= 0:
        return None if not durations else 0.0
    return mean(durations) * remaining


def time_left_s(point_s: Sequence[float], points_left: int, server_s: Sequence[float] = (),
                servers_left: int = 0) -> float | None:
    """A sweep's time left: the points left at the mean duration of the measured ones, plus the
    servers still to start at the mean start-up time of those started; None before any point."""
    points = eta_s(point_s, points_left)
    if points is None:
        return None
    return points + (eta_s(server_s, servers_left) or 0.0)


def duration_text(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``1 h 04 min``: for elapsed time and estimates."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def sweep_points(steps: Sequence[Any]) -> dict[str, tuple[int, int]]:
    """Bench step id -> (n, N) for every point of every sweep step in the plan."""
    points: dict[str, tuple[int, int]] = {}
    for p in steps:
        ids = p.step.points  # a sweep's points
        for n, pid in enumerate(ids, 1):
            points[pid] = (n, len(ids))
    return points


class _Line:
    """The spinner's text, rendered anew at every refresh so the elapsed time runs."""

    def __init__(self, title: str):
        self.title, self.state, self.started = title, "", time.monotonic()

    def __rich__(self) -> Text:
        text = Text(self.title, style="bold")
        if self.state:
            text.append(f": {self.state}")
        text.append(f"  {duration_text(time.monotonic() - self.started)}", style="dim")
        return text


class Activity:
    """One live activity (a server starting, a benchmark running): a spinner on a terminal,
    a plain line per change otherwise, nothing when quiet; log lines streamed when verbose."""

    def __init__(self, progress: "Progress", title: str):
        self.progress, self.line_text = progress, _Line(title)
        self.last_plain = time.monotonic()  # without a terminal: a first count after PLAIN_COUNT_EVERY_S
        self.last_count: tuple[int | None, int] | None = None
        self.status = None

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.line_text.started

    def phase(self, name: str) -> None:
        """A server's start-up phase (``serving.watch.PHASES``)."""
        self.line_text.state = name
        # without a terminal a line per phase; "starting" and "ready" have their own lines already
        if self.status is None and name not in ("starting", "ready") and not self.progress.quiet:
            self.progress.note(f"      {name} ({duration_text(self.elapsed_s)})")

    def line(self, text: str) -> None:
        """A new line of the log being watched; shown only with -v."""
        if self.progress.verbose:
            self.progress.console.print(Text(self.progress.redact(text), style="dim"), highlight=False,
                                        soft_wrap=True)

    def count(self, done: int | None, total: int) -> None:
        """A benchmark's measured requests finished so far (None: the server does not say)."""
        self.line_text.state = f"{done}/{total} requests" if done is not None else f"{total} requests, running"
        if self.status is None and not self.progress.quiet and done is not None:
            now = time.monotonic()
            if (done, total) != self.last_count and (done == total or now - self.last_plain >= PLAIN_COUNT_EVERY_S):
                self.last_plain, self.last_count = now, (done, total)
                self.progress.note(f"      {done}/{total} requests ({duration_text(self.elapsed_s)})")


class Progress:
    """The executor's progress display on its console (see the module's docstring)."""

    def __init__(self, console: Console, verbosity: int | None = None,
                 redact: Callable[[str], str] | None = None):
        self.console = console
        self.verbosity = current_verbosity() if verbosity is None else verbosity
        self.redact: Callable[[str], str] = redact or (lambda text: text)
        self.points: dict[str, tuple[int, int]] = {}
        self.pending: set[str] = set()  # sweep points not measured yet
        self.point_seconds: list[float] = []
        self.servers_pending: set[str] = set()  # the sweep's servers not started yet
        self.server_seconds: list[float] = []

    @property
    def quiet(self) -> bool:
        return self.verbosity <= QUIET

    @property
    def verbose(self) -> bool:
        return self.verbosity >= VERBOSE

    def attach(self, plan: Any, redact: Callable[[str], str] | None = None, skip: Sequence[str] = ()) -> "Progress":
        """Learn the plan's sweep points (``skip``: measured in an earlier run) and how to redact."""
        if redact is not None:
            self.redact = redact
        self.points = sweep_points(plan.steps)
        self.pending = {pid for pid in self.points if pid not in set(skip)}
        self.servers_pending = {p.step.server for p in plan.steps if p.id in self.pending
                                and getattr(p.step, "server", None)}
        return self

    def note(self, text: str) -> None:
        """A progress line: shown unless quiet (never read as markup)."""
        if not self.quiet:
            self.console.print(self.redact(text), markup=False, highlight=False, soft_wrap=True)

    def step(self, n: int, total: int, p: Any) -> None:
        """``[n/N] id: kind``; a sweep point adds ``point i of M`` and the estimated time left."""
        text = f"[{n}/{total}] {p.id}: {p.kind}"
        if p.id in self.points:
            i, m = self.points[p.id]
            text += f" (sweep point {i} of {m}"
            left = time_left_s(self.point_seconds, len(self.pending), self.server_seconds,
                               len(self.servers_pending))
            text += f", about {duration_text(left)} left)" if left is not None else ")"
        self.note(text)

    def step_done(self, p: Any, seconds: float, show: bool = True) -> None:
        if p.id in self.pending:
            self.pending.discard(p.id)
            self.point_seconds.append(seconds)
        if p.id in self.servers_pending:
            self.servers_pending.discard(p.id)
            self.server_seconds.append(seconds)
        if show:
            self.note(f"      done in {seconds:.1f} s")

    def dropped(self, p: Any) -> None:
        """A step that failed or was skipped: no longer counted in the time left."""
        self.pending.discard(p.id)
        self.servers_pending.discard(p.id)

    @contextlib.contextmanager
    def activity(self, title: str) -> Iterator[Activity]:
        """A live activity: a spinner with elapsed time on a terminal (not when quiet)."""
        act = Activity(self, title)
        if self.quiet or not self.console.is_terminal:
            yield act
            return
        with self.console.status(act.line_text, spinner="dots") as status:
            act.status = status
            yield act
