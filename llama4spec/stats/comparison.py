"""One setting against another at one concurrency: the verdict of its Holm family, its interval, and
what would settle it when undecided (``compare`` builds them)."""

from __future__ import annotations

from dataclasses import dataclass

from llama4spec.stats.interval import Interval
from llama4spec.stats.looks import REPEATS_CAP
from llama4spec.stats.noise import Noise

EQUIVALENT = "equivalent"


@dataclass(frozen=True)
class Comparison:
    """``first`` against ``second`` (point ids), two settings at one concurrency.

    ``verdict`` says whether ``first`` is declared faster or slower than ``second`` by Holm over the
    concurrency's family (``compare``). ``interval`` is Welch's ratio interval at ``level`` (one-sided
    alpha on each side): the level of the Holm step that declared it, or of Holm's next step when it
    is undecided, so the interval excludes 1 exactly when the verdict is decided. Without 2 runs a
    side there is no interval and ``ratio`` is the ratio of medians.
    """

    first: str
    second: str
    ratio: float | None  # geometric means (Welch) or medians (single samples)
    interval: Interval | None
    verdict: str  # "faster", "slower", "equivalent" (within +-margin) or "undecided"
    level: float | None  # one-sided alpha of the interval (None without one)
    hypotheses: int  # one-sided hypotheses in the concurrency's Holm family
    runs_to_settle: int | None = None  # undecided: runs a side that would decide it as measured now
    needs_start: bool = False  # undecided: only another server start can settle it
    noise: Noise | None = None  # the estimate its between-start term came from (None: none)
    margin: float | None = None  # equivalence: "equivalent" when its interval lies within +-margin
    basis: str | None = None  # back-to-back blocks: what its interval rests on ("4 blocks' own spread (3 df)")

    @property
    def decided(self) -> bool:
        return self.verdict != "undecided"

    @property
    def method(self) -> str:
        return self.interval.method if self.interval is not None else "single samples"

    def mirrored(self) -> Comparison:
        """``second`` against ``first``."""
        flip = {"faster": "slower", "slower": "faster"}.get(self.verdict, self.verdict)
        iv = self.interval
        if iv is not None:
            iv = iv.inverse()
        return Comparison(self.second, self.first, None if self.ratio is None else 1 / self.ratio, iv, flip,
                          self.level, self.hypotheses, self.runs_to_settle, self.needs_start, self.noise,
                          self.margin, self.basis)

    def text(self) -> str:
        """``2.43x [1.20, 4.91] (98.3%)``, or the ratio alone without an interval."""
        if self.ratio is None:
            return "-"
        if self.interval is None:
            return f"{self.ratio:.2f}x"
        iv = self.interval
        on = f" on {self.basis}" if self.basis else ""
        return f"{iv.ratio:.2f}x [{iv.low:.2f}, {iv.high:.2f}] ({_percent(iv.confidence)}){on}"

    def settle(self, short: bool = False) -> str:
        """What would settle it when undecided ("" when decided). The runs a side: the smallest n
        at which Welch's test at Holm's next level would decide the difference, were each side's
        spread and the difference to stay as measured (``ratio.runs_to_settle``)."""
        if self.decided:
            return ""
        if self.interval is None:
            return "at least 2 runs a side" if short else "needs at least 2 runs a side"
        if self.basis:
            return "more blocks" if short else ("needs more back-to-back blocks (starts: J sets them; max_repeats "
                                                "under repeats: auto)")
        if self.needs_start:
            return "another server start" if short else (
                "needs another server start (the between-start term alone keeps its interval across 1)")
        if self.runs_to_settle is None:
            return f"more than {REPEATS_CAP} runs a side"
        if short:
            return f"about {self.runs_to_settle} runs a side"
        return f"about {self.runs_to_settle} runs a side would settle it if the spread and the difference stay as measured"

    def sentence(self) -> str:
        """``faster``, ``slower``, ``equivalent within +-2%``, or ``undecided: <what would settle it>``."""
        if self.verdict == EQUIVALENT:
            return f"{EQUIVALENT} within +-{100 * (self.margin or 0):g}%"
        return self.verdict if self.decided else f"undecided: {self.settle()}"


def _percent(confidence: float) -> str:
    """``98.33%``; as many more decimals as keep a level below 100% from reading 100%."""
    for digits in range(2, 8):
        text = f"{100 * confidence:.{digits}f}"
        if float(text) < 100 or confidence >= 1:
            break
    return f"{text.rstrip('0').rstrip('.')}%"
