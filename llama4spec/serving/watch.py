"""Watching a server or a benchmark while it runs, for live progress: the start-up phase read
from a vLLM server's log, new log lines as they come, and finished requests from ``/metrics``.

Nothing here prints; callers pass callbacks (``on_phase``, ``on_line``, ``on_progress``) and the
executor decides what reaches the terminal.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Sequence

# A vLLM 0.32 server's start-up, in order: each phase with the log lines that begin it (taken from
# real logs of the CPU build and the GPU model runner's messages). A later phase never goes back.
PHASES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("starting", re.compile(r"non-default args:|Resolved architecture:")),
    ("starting the engine", re.compile(r"Initializing a V1 LLM engine")),
    ("loading weights", re.compile(r"Starting to load model|Loading safetensors checkpoint shards|"
                                   r"Loading weights took|Loading drafter model|Model loading took")),
    ("compiling / warming up", re.compile(r"Starting torch\.compile|Dynamo bytecode transform|Compiling a graph|"
                                          r"Warming up model|Compile and warming up|Memory profiling|"
                                          r"Available KV cache memory|KV cache size:")),
    ("capturing graphs", re.compile(r"Capturing CUDA graphs")),
    ("starting the API server", re.compile(r"init engine \(profile, create kv cache, warmup model\) took|"
                                           r"Supported tasks:")),
    ("ready", re.compile(r"Starting vLLM server on|Application startup complete")),
)
PHASE_NAMES = tuple(name for name, _ in PHASES)


# vLLM 0.32 logs turning async scheduling off (VllmConfig.__post_init__: a method outside the EAGLE
# family, draft models and ngram_gpu; padded drafter batches; an executor without it; ...); it logs
# nothing when it turns it on.
ASYNC_OFF = re.compile(r"Async scheduling (not supported with .* will be disabled|is not compatible with .* will be "
                       r"disabled|will be disabled|is disabled)")


def async_scheduling(log_text: str, argv: Sequence[str]) -> bool | None:
    """Whether a server ran with async scheduling, from its own flags and log: the flag where given,
    off where vLLM says it turned it off, on once the log shows the engine started without that line
    (vLLM's default), None before."""
    for arg in reversed(list(argv)):
        if arg in ("--async-scheduling", "--no-async-scheduling"):
            return arg == "--async-scheduling"
    if ASYNC_OFF.search(log_text):
        return False
    return True if "Initializing a V1 LLM engine" in log_text else None


def phase_of(line: str) -> str | None:
    """The phase a log line starts, or None (the last matching phase wins)."""
    found = None
    for name, pattern in PHASES:
        if pattern.search(line):
            found = name
    return found


class PhaseTracker:
    """The current phase, moving only forward; ``feed`` returns a phase when one begins."""

    def __init__(self, phase: str = "starting"):
        self.phase = phase

    def feed(self, line: str) -> str | None:
        found = phase_of(line)
        if found is None or PHASE_NAMES.index(found) <= PHASE_NAMES.index(self.phase):
            return None
        self.phase = found
        return found


class LogFollower:
    """New complete lines of a growing log file, from where the last call stopped (``\\r``
    progress-bar redraws count as line ends; a partial last line waits for its end)."""

    def __init__(self, path: Path, from_end: bool = False):
        self.path = Path(path)
        self.offset = 0
        self.pending = ""
        if from_end:
            try:
                self.offset = self.path.stat().st_size
            except OSError:
                pass

    def read(self) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(1 << 20)
        except OSError:
            return []
        self.offset += len(data)
        text = self.pending + data.decode("utf-8", errors="replace")
        parts = re.split(r"\r\n|\r|\n", text)
        self.pending = parts.pop()
        return [p for p in parts if p.strip()]


class ServerWatch:
    """A tick for a starting server: reads its log(s), reports phase changes and (``on_line``)
    every new line. Exceptions in callbacks are the caller's; reading never raises."""

    def __init__(self, logs: Sequence[Path], on_phase: Callable[[str], None] | None = None,
                 on_line: Callable[[str], None] | None = None, labels: Sequence[str] | None = None):
        # created before the processes start: what the logs hold already is an earlier run's
        self.followers = [LogFollower(p, from_end=True) for p in logs]  # the first is the leader's
        self.labels = list(labels) if labels is not None else ["" for _ in logs]
        self.tracker = PhaseTracker()
        self.on_phase, self.on_line = on_phase, on_line

    def start(self) -> None:
        if self.on_phase:
            self.on_phase(self.tracker.phase)

    def tick(self) -> None:
        if not (self.on_phase or self.on_line):
            return
        for i, (follower, label) in enumerate(zip(self.followers, self.labels)):
            for line in follower.read():
                if self.on_line:
                    self.on_line(f"{label}: {line}" if label else line)
                if i == 0 and self.on_phase and (phase := self.tracker.feed(line)):
                    self.on_phase(phase)

    def ready(self) -> None:
        self.tick()
        if self.on_phase and self.tracker.phase != "ready":
            self.tracker.phase = "ready"
            self.on_phase("ready")


# -- benchmarks: finished requests from the server's Prometheus counter ----------------------------
FINISHED_COUNTER = "vllm:request_success_total"  # labelled by finished_reason (stop, length, abort, ...)


def finished_requests(metrics_text: str) -> float | None:
    """Every request the server has finished (all reasons, all engines), from ``/metrics`` text;
    None when the counter is absent."""
    total, seen = 0.0, False
    for line in metrics_text.splitlines():
        if line.startswith(FINISHED_COUNTER) and line[len(FINISHED_COUNTER)] in "{ ":
            try:
                total += float(line.rsplit(None, 1)[1])
                seen = True
            except (ValueError, IndexError):
                continue
    return total if seen else None


def extra_requests(flags: Sequence[str]) -> int:
    """Requests ``vllm bench serve`` sends besides the measured ones: ``--num-warmups N`` and one
    test request when ``--ready-check-timeout-sec`` is above 0 (vLLM 0.32 skips it by default)."""
    def value(name: str) -> str | None:
        found = None
        for i, flag in enumerate(flags):
            if flag == name and i + 1 < len(flags):
                found = flags[i + 1]
            elif flag.startswith(name + "="):
                found = flag.split("=", 1)[1]
        return found

    def number(text: str | None) -> int:
        try:
            return max(0, int(float(text))) if text is not None else 0
        except ValueError:
            return 0

    return number(value("--num-warmups")) + (1 if number(value("--ready-check-timeout-sec")) > 0 else 0)


def requests_done(before: float | None, now: float | None, extra: int, total: int) -> int | None:
    """Measured requests finished so far: the counter's growth since before the benchmark, less
    the warm-up and test requests, within [0, total]; None when either reading is missing."""
    if before is None or now is None:
        return None
    return int(min(total, max(0.0, now - before - extra)))
