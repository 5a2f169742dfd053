"""A lossless record's verdicts as sentences, each test with its power line (pure): what the run's
exit lines, summary.md and the report page say. Read from the record's JSON form (a record this
run wrote, or one read back through ``record.load``); a value that is not what the record writes is
left out of its sentence, never a traceback."""

from __future__ import annotations

import math
from typing import Any, Mapping

from pydantic import BaseModel

from llama4spec.files import plain
from llama4spec.lossless.settings import sampling_words


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _p(test: Mapping[str, Any]) -> str:
    p, draws = _num(test.get("p_value")), _num(test.get("draws"))
    if p is None:
        return "p unknown"
    return f"p <= {p:.2g}" if draws and p <= 1 / (1 + draws) else f"p = {p:.3g}"


def _sampling(test: Mapping[str, Any]) -> str:
    s = test.get("sampling") if isinstance(test.get("sampling"), Mapping) else {}
    t = _num(test.get("temperature"))
    top_p, top_k = _num(s.get("top_p")), _num(s.get("top_k"))
    return ", ".join([f"T={t:g}" if t is not None else "T=?",
                      *sampling_words(1.0 if top_p is None else top_p, -1 if top_k is None else top_k)])


def power(test: Mapping[str, Any]) -> str:
    """The power line of one test above temperature 0."""
    eps, counts = _num(test.get("detectable")), test.get("counts")
    n = sum(counts) if isinstance(counts, list) and all(_num(c) is not None for c in counts) else None
    many = f"{int(n):,} tokens" if n is not None else "the tokens scored"
    if test.get("test") == "exact multinomial":
        if eps is None:
            return f"too few tokens ({many}) to state a shift found with 80% power"
        return f"a shift of P(successor) by {eps:.3g} is found with 80% power ({many})"
    control = test.get("control") if isinstance(test.get("control"), Mapping) else {}
    sharp, flat, tv = _num(control.get("sharp")), _num(control.get("flat")), _num(control.get("tv"))
    if eps is None or sharp is None or flat is None:
        return f"too few tokens ({many} a run) to state a deviation found with 80% power"
    bound = _num(control.get("tail_bound"))
    tail = f"; the reference's tail bound {bound:.2g}" if bound else ""
    mean_tv = f", a mean total-variation distance of {tv:.3g} or less" if tv is not None else ""
    return (f"a sampler that moves {sharp:.3g} of its tokens to the target's top-1, or {flat:.3g} outside its top two, "
            f"is found with 80% power ({many} a run{mean_tv}{tail})")


def lines(data: Mapping[str, Any] | BaseModel) -> list[str]:
    """The verdicts of one record (its JSON form, or the model it was read back through): the whole,
    then each test with its figures and power line."""
    if isinstance(data, BaseModel):
        data = data.model_dump(by_alias=True)
    verdict = data.get("verdict")
    out = [f"lossless: {'lossy: a test rejected losslessness' if verdict == 'lossy' else 'pass: no test rejected losslessness'}"
           f" (joint level {_num(data.get('settings', {}).get('level')) or 0:g})"]
    g = data.get("greedy")
    if isinstance(g, Mapping):
        n, mine, own = g.get("requests"), g.get("diverged"), g.get("baseline_diverged")
        counts = (f"{len(mine)} of {n} diverged, the engine's own {len(own)} of {n}"
                  if isinstance(mine, list) and isinstance(own, list) else "divergences unreadable")
        level = _num(g.get("level"))
        out.append(f"T=0: {plain(str(g.get('verdict')), 10)} ({counts}; Fisher {_p(g)}"
                   f"{f' at {level:.3g}' if level is not None else ''})")
    for test in data.get("sampled") or []:
        if not isinstance(test, Mapping):
            continue
        level = _num(test.get("level"))
        name = "cross-check, exact multinomial" if test.get("test") == "exact multinomial" else "context-conditioned"
        out.append(f"{_sampling(test)}, {name}: {plain(str(test.get('verdict')), 10)} ({_p(test)}"
                   f"{f' at {level:.3g}' if level is not None else ''}); {power(test)}")
    return out
