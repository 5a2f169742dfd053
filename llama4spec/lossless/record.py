"""The losslessness record (``lossless.json``): what was checked, every count and p-value, the
verdicts; and, read back for ``regress``, what got worse between two records."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama4spec.errors import UserError
from llama4spec.files import Expect, json_or_none, plain
from llama4spec.lossless.check import LOSSY, PASS, Greedy, SampledTest, as_dict
from llama4spec.lossless.settings import Settings

KIND = "lossless"
SCHEMA = "llama4spec.lossless/2"
FILE = "lossless.json"
READ = Expect("lossless record", "it is not a lossless record this tool wrote", 16 << 20)


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

        write_json(Path(path), self.to_dict())


def load(path: Path) -> dict[str, Any]:
    """A lossless record read back and checked, every field ``worse`` and ``verdict_lines`` read of
    its type and finite (what regress compares); UserError, one line naming the field and the rule."""
    from llama4spec.files import shown

    data, why = json_or_none(Path(path), READ)
    where = plain(str(path))
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UserError(f"{where}: {why or 'it is not a lossless record this tool wrote'}")

    def num(x: Any, low: float, high: float) -> bool:
        return _number(x) and low <= x <= high

    def counts(x: Any) -> bool:
        return isinstance(x, list) and len(x) <= 1000 and all(
            isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 10**12 for c in x)

    verdict, text, share = (lambda x: x in (PASS, LOSSY), "pass or lossy"), (lambda x: isinstance(x, str), "text"), \
        (lambda x: num(x, 0, 1), "a number from 0 to 1")
    rules: list[tuple[str, Any, Any, str]] = [
        ("verdict", data.get("verdict"), *verdict), ("target", data.get("target"), *text),
        ("settings", data.get("settings"), lambda x: isinstance(x, dict), "a mapping")]
    greedy = data.get("greedy")
    rules.append(("greedy", greedy, lambda x: x is None or isinstance(x, dict), "a mapping or null"))
    if isinstance(greedy, dict):
        rules += [("greedy.diverged", greedy.get("diverged"), lambda x: isinstance(x, list), "a list"),
                  ("greedy.requests", greedy.get("requests"), lambda x: counts([x]), "a whole number of 0 or more")]
    sampled = data.get("sampled")
    rules.append(("sampled", sampled, lambda x: isinstance(x, list) and len(x) <= 1000, "a list of tests"))
    for i, t in enumerate(sampled if isinstance(sampled, list) else []):
        at = f"sampled[{i}]"
        if not isinstance(t, dict):
            rules.append((at, t, lambda x: False, "a mapping"))
            continue
        rules += [(f"{at}.temperature", t.get("temperature"), lambda x: num(x, 0, 100), "a number from 0 to 100"),
                  (f"{at}.p_value", t.get("p_value"), *share), (f"{at}.level", t.get("level"), *share),
                  (f"{at}.verdict", t.get("verdict"), *verdict), (f"{at}.test", t.get("test"), *text),
                  (f"{at}.counts", t.get("counts"), lambda x: x is None or counts(x), "a list of whole numbers")]
    for field_name, value, ok, rule in rules:
        if not ok(value):
            said = "missing" if value is None else f"{shown(value)}, not {rule}"
            raise UserError(f"{where}: not a lossless record this tool wrote ('{field_name}' is {said})")
    return data


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def worse(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What got worse from ``old`` to ``new`` (two ``load``-ed records of one target), one line each;
    UserError when they checked different targets."""
    if old["target"] != new["target"]:
        raise UserError(f"the lossless records checked different targets ({plain(old['target'], 120)} and "
                        f"{plain(new['target'], 120)}); give two checks of the same target")
    out = []
    if old["verdict"] == PASS and new["verdict"] == LOSSY:
        out.append("lossless verdict: pass -> lossy")
    og, ng = old.get("greedy"), new.get("greedy")
    if og and ng:
        a, b = len(og["diverged"]), len(ng["diverged"])
        if b / max(ng["requests"], 1) > a / max(og["requests"], 1):
            out.append(f"temperature 0: {a} of {og['requests']} requests diverged -> {b} of {ng['requests']}")
    olds = {float(t["temperature"]): t for t in old["sampled"]}
    for t in new["sampled"]:
        before = olds.get(float(t["temperature"]))
        if before is not None and before["verdict"] == PASS and t["verdict"] == LOSSY:
            out.append(f"temperature {float(t['temperature']):g}: {t['test']} p = {before['p_value']:.3g} -> "
                       f"{t['p_value']:.3g} (rejected at {t['level']:.3g})")
    return out
