"""A breakeven step's ``draft_from``: a draft measured earlier by this tool, read back and placed on
the map as the draft measured beside it is.

What it reads is input, checked when the step is planned (a dry run too), every problem one line:

- a bench step's directory of a run (``runs/NAME/TIMESTAMP/STEP``) or its ``record.json``: the record
  (``"kind": "llama4spec.bench"``, a counted run) and the step's ``config.yaml`` beside it, which name
  the target, the lookahead and the concurrency; its acceptance length per counted run from vLLM's
  counters as recorded. One server measured alone: no speedup, so it is placed, not self-checked;
- a sweep step's ``sweep.json``: its speculative rows at the map's lookaheads and concurrencies, each
  read as above from its bench step's directory in the same run directory, with the row's speedup over
  no speculation and that speedup's interval (the sweep's own Welch ratio).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from llama4spec.breakeven.map_fit import Given, Range
from llama4spec.stats.point import SCHEDULED
from llama4spec.analysis.points import dotted
from llama4spec.errors import UserError
from llama4spec.files import count, plain
from llama4spec.results.bench import read_record
from llama4spec.runbook.rundir import config_or_problem
from llama4spec.sweep.sweep_records import Row, read_sweep

MAX_ROWS = 4096  # rows read from one sweep.json
FIX = ("give a bench step's directory of a run (runs/NAME/TIMESTAMP/STEP), its record.json, or a sweep step's "
       "sweep.json")


def resolve(ref: str, bases: Sequence[Path]) -> Path | None:
    """The file or directory ``ref`` names, relative to the first of ``bases`` where it exists."""
    for base in bases:
        candidate = (base / ref).expanduser()
        if candidate.exists():
            return candidate
    return None


def read(path: Path, target: str | None, lookaheads: Sequence[int],
         concurrencies: Sequence[int]) -> tuple[list[Given], list[str]]:
    """(the drafts ``path`` holds at the map's lookaheads and concurrencies, the problems found)."""
    if path.is_dir():
        path = path / "record.json"
    if path.name == "sweep.json":
        return _sweep(path, target, lookaheads, concurrencies)
    given, problem = _bench(path.parent, target, path.name)
    if problem is None:
        problem = _on_map(given, plain(str(path)), lookaheads, concurrencies)
    return ([given], []) if problem is None else ([], [problem])


def _bench(directory: Path, target: str | None, name: str = "record.json", speedup: Range | None = None,
           confidence: float = 0.95, in_sweep: bool = False) -> tuple[Given | None, str | None]:
    """One bench step's record and config read back as a placed draft, or the one-line problem;
    (None, None) for a sweep's point that ran a lookahead schedule (at no one lookahead: left out)."""
    where = plain(str(directory / name))
    if name != "record.json":
        return None, f"draft_from {where} is neither a bench record (record.json) nor a sweep's sweep.json; {FIX}"
    record, why = read_record(directory / name)
    if why is not None:
        return None, f"draft_from {why}; {FIX}"
    if record is None:
        return None, f"draft_from {where} does not exist; {FIX}"
    if not record.counted:
        return None, f"draft_from {where}: its benchmark completed no counted run; give a record that measured one"
    config, why = config_or_problem(directory / "config.yaml")
    if why is not None:
        return None, f"draft_from {why}"
    if config is None:
        return None, (f"draft_from {where}: there is no config.yaml beside it, so its target, lookahead and "
                      f"concurrency cannot be told; give the bench step's directory of a run")
    if dotted(config, "draft.synthetic_acceptance_length") is not None or \
            dotted(config, "draft.synthetic_acceptance_rates") is not None:
        return None, (f"draft_from {where} measured synthetic acceptance, not a draft; give a record of the draft "
                      f"itself")
    if dotted(config, "draft.lookahead_schedule"):
        return None, None if in_sweep else (f"draft_from {where} ran a lookahead schedule, whose k varies with the batch; give a record "
                      f"measured at one lookahead")
    acceptance = tuple(record.acceptance_samples())
    k, c = count(dotted(config, "lookahead")), count(dotted(config, "bench.max_concurrency"), 1)
    if not dotted(config, "draft.method") or not acceptance or not k or c is None:
        return None, (f"draft_from {where} holds no acceptance from vLLM's counters (a run without speculation, or "
                      f"one whose counters were not read); give a record of a server with a draft")
    impossible = _impossible(acceptance, k, where)
    if impossible is not None:
        return None, impossible
    theirs = dotted(config, "target.model")
    if target is not None and theirs != target:
        return None, (f"draft_from {where} measured target {plain(str(theirs))}, not this map's {plain(target)}; "
                      f"give a record of the same target")
    label = plain(str(dotted(config, "draft.name") or dotted(config, "draft.method")), 60)
    return Given(k, c, acceptance, f"{label} ({plain(directory.name, 80)})", speedup, confidence), None


def _impossible(acceptance: Sequence[float], k: int, where: str) -> str | None:
    """The one-line problem when a run's acceptance length cannot be true: a verification step keeps
    the target's token and at most k drafted ones, so the mean length is in [1, k+1]."""
    bad = next((a for a in acceptance if not 1 - 1e-9 <= a <= k + 1 + 1e-9), None)
    if bad is None:
        return None
    return (f"draft_from {where}: a counted run's acceptance length {bad:.10g} is outside [1, k+1] = [1, {k + 1}] "
            f"at lookahead {k} (a step keeps the target's token and at most {k} drafted ones); its counters are "
            f"damaged, give a record this tool wrote")


def _on_map(g: Given, where: str, lookaheads: Sequence[int], concurrencies: Sequence[int]) -> str | None:
    if g.lookahead not in lookaheads:
        return (f"draft_from {where} measured lookahead {g.lookahead}, which is not on the map (lookaheads "
                f"{', '.join(map(str, lookaheads))}); add {g.lookahead} to lookaheads or give a record at one of them")
    if g.concurrency not in concurrencies:
        return (f"draft_from {where} measured concurrency {g.concurrency}, which is not on the map (concurrencies "
                f"{', '.join(map(str, concurrencies))}); add {g.concurrency} to concurrencies or give a record at "
                f"one of them")
    return None


def _speedup(row: Row) -> tuple[Range | None, float]:
    """A sweep row's speedup over no speculation with its interval (its confidence), as read back."""
    iv = row.speedup_interval
    if iv is not None and iv.low is not None and iv.high is not None and iv.low <= iv.ratio <= iv.high \
            and 0.5 <= iv.confidence <= 0.999:
        return Range(iv.ratio, iv.low, iv.high), iv.confidence
    return (Range(row.speedup, None, None), 0.95) if row.speedup else (None, 0.95)


def _sweep(path: Path, target: str | None, lookaheads: Sequence[int],
           concurrencies: Sequence[int]) -> tuple[list[Given], list[str]]:
    """The drafts of a sweep.json read back through its model (``sweep.records``): a damaged field is
    the one problem, naming the file, the field and the rule."""
    where = plain(str(path))
    if not path.exists():
        return [], [f"draft_from {where} does not exist; {FIX}"]
    try:
        sweep = read_sweep(path)
    except UserError as err:
        return [], [f"draft_from {err}"]
    run_dir = path.parent.parent  # RUN/<sweep step>/sweep.json: the rows' bench steps are RUN/<id>/
    givens, problems, rows = [], [], 0
    for at in sweep.concurrency:
        if at.concurrency not in concurrencies:
            continue
        for row in at.rows:
            rows += 1
            if rows > MAX_ROWS:
                return [], [f"draft_from {where} has more than {MAX_ROWS} rows; it is not a sweep this tool wrote"]
            if row.draft in (None, "none") or row.lookahead not in lookaheads or row.draft.endswith(SCHEDULED):
                continue  # no speculation, off the map, or a schedule (no one k)
            speedup, level = _speedup(row)
            given, problem = _bench(run_dir / row.id, target, speedup=speedup, confidence=level, in_sweep=True)
            if given is None and problem is None:
                continue
            if problem is None and (given.lookahead, given.concurrency) != (row.lookahead, at.concurrency):
                problem = (f"draft_from {where}: row {row.id} says k={row.lookahead}, c={at.concurrency}, its "
                           f"record's config k={given.lookahead}, c={given.concurrency}; the two disagree")
            if problem is not None:
                problems.append(problem)
            else:
                givens.append(given)
    if not givens and not problems:
        problems.append(f"draft_from {where} has no draft measured at the map's lookaheads "
                        f"({', '.join(map(str, lookaheads))}) and concurrencies ({', '.join(map(str, concurrencies))}); "
                        f"widen the map or give another record")
    return givens, problems
