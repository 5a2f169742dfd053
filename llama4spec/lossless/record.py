"""The losslessness record (``lossless.json``): what was checked, every count and p-value, the
verdicts; and, read back for ``regress``, what got worse between two records."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama4spec.errors import UserError
from llama4spec.files import plain
from llama4spec.lossless.check import LOSSY, PASS, Greedy, SampledTest, as_dict
from llama4spec.lossless.records import FILE, KIND, READ, SCHEMA, LosslessFile, read
from llama4spec.records.io import checked
from llama4spec.lossless.settings import Settings

__all__ = ["FILE", "KIND", "READ", "SCHEMA", "LosslessRecord", "load", "worse"]


@dataclass
class LosslessRecord:
    created: str
    versions: dict[str, Any]
    models: dict[str, Any]
    overrides: list[str]
    config: dict[str, Any]
    target: str  # the target config's name: what two records must share to be compared
    draft: str  # the draft config's name
    lookahead: int
    prompts: dict[str, Any]
    settings: Settings
    tests: int  # how many tests share the joint level
    greedy: Greedy | None
    sampled: list[SampledTest]
    engine_start_s: list[float] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        parts = ([self.greedy.verdict] if self.greedy else []) + [s.verdict for s in self.sampled]
        return LOSSY if LOSSY in parts else PASS

    def figures(self) -> dict[str, Any]:
        """What a run summary shows: the verdict, and each test's verdict with its power line."""
        from llama4spec.lossless.verdict_lines import lines

        return {"verdict": self.verdict, "tests": self.tests,
                "smallest_p": min([t.p_value for t in self.sampled] + ([self.greedy.p_value] if self.greedy else []),
                                  default=None),
                "verdicts": lines(self.to_dict())}

    def to_dict(self) -> dict[str, Any]:
        s = self.settings
        return {
            "kind": KIND, "schema": SCHEMA, "created": self.created, "versions": self.versions, "models": self.models,
            "overrides": self.overrides, "config": self.config, "target": self.target, "draft": self.draft,
            "lookahead": self.lookahead, "prompts": self.prompts,
            "settings": {"temperatures": list(s.temperatures), "samples": s.samples, "level": s.level,
                         "wide_gap": s.wide_gap, "top_p": s.top_p, "top_k": s.top_k, "url": s.url},
            "tests": self.tests, "level_per_test": s.level / self.tests if self.tests else None,
            "verdict": self.verdict,
            "greedy": as_dict(self.greedy) if self.greedy else None,
            "sampled": [as_dict(t) for t in self.sampled],
            "engine_start_s": self.engine_start_s,
        }

    def write(self, path: Path) -> None:
        from llama4spec.files import write_json

        data = self.to_dict()
        checked(LosslessFile, Path(path), data)  # as a reader reads it back: nothing written when a rule breaks
        write_json(Path(path), data)


def load(path: Path) -> LosslessFile:
    """A lossless record read back through its model (``records.LosslessFile``): what ``worse`` and
    the verdict lines read; UserError, one line naming the file, the field and the rule."""
    return read(path)


def worse(old: LosslessFile, new: LosslessFile) -> list[str]:
    """What got worse from ``old`` to ``new`` (two ``load``-ed records of one target), one line each;
    UserError when they checked different targets."""
    if old.target != new.target:
        raise UserError(f"the lossless records checked different targets ({plain(old.target, 120)} and "
                        f"{plain(new.target, 120)}); give two checks of the same target")
    out = []
    if old.verdict == PASS and new.verdict == LOSSY:
        out.append("lossless verdict: pass -> lossy")
    og, ng = old.greedy, new.greedy
    if og and ng:
        a, b = len(og.diverged), len(ng.diverged)
        if b / max(ng.requests, 1) > a / max(og.requests, 1):
            out.append(f"temperature 0: {a} of {og.requests} requests diverged -> {b} of {ng.requests}")
    olds = {t.temperature: t for t in old.sampled}
    for t in new.sampled:
        before = olds.get(t.temperature)
        if before is not None and before.verdict == PASS and t.verdict == LOSSY:
            out.append(f"temperature {t.temperature:g}: {t.test} p = {before.p_value:.3g} -> "
                       f"{t.p_value:.3g} (rejected at {t.level:.3g})")
    return out
