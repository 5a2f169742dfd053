"""Measuring until decided against a fixed 10 runs a point, on the imperfect pair's sweep (issue 21).

The sweep of runbooks/tiny_cpu_imperfect_sweep.yaml (its overrides, warm-up and client flags) with
lookahead 1, 2, 3, 5 of tiny_eagle_imperfect and no speculation, at concurrency 1 and 4 (5 servers,
10 points), run four times, alternating the designs so that load drifting over time falls on both:
auto, fixed, auto, fixed. Each run is `llama4spec run <generated runbook> --runs-dir DIR`: the
sweep step has `repeats: auto` with `max_repeats` N; a fixed run adds `--repeats N` (default 10).
Both designs keep the sweep's default `skip_dominated: true`, so either may leave a dominated
lookahead's server unstarted; what differs is only how many runs each point gets.

Per run, from its run directory: counted runs (the points' records' repeats, summed), server starts
(serve steps that ran here: done and not resumed; a skipped one, such as a dominated lookahead, did
not start), benchmark time (the bench and settle steps' seconds in status.json) and start time (the
serve steps' seconds) apart, why the points stopped (auto), and at every concurrency the
recommendation (sweep.json's `choices`: decided or undecided) and each lookahead's verdict against
no speculation. Then, over every auto run against every fixed run at each concurrency (a cell):
cells where a decided auto answer contradicts a decided fixed one (a decided recommendation that
differs, or a comparison decided in opposite directions; target: none), cells where exactly one
design is undecided, the same between the two auto runs, and auto's counted runs and benchmark time
as a share of the fixed design's (targets: at most 50% and 60%).

Time: over an hour of machine time on this machine's 2 shared cores (an estimate from the spreads
benchmark's timings, not yet measured end to end): server starts 30-55 s each x 5 servers x 4 runs
(10-18 min; fewer where a dominated lookahead is not started), and counted runs of 2-20 s each
(a fixed run: 100 of them, about 12-20 min with its warm-ups; an auto run fewer). Do not run it
beside other timed work. `--from` only reads the four run directories (a second or two).

    .venv/bin/python benchmarks/decisive.py [--repeats 10] [--port 8769] [--runs-dir runs] [--dry-run]
    .venv/bin/python benchmarks/decisive.py --revisit --auto-only   (auto with revisit: true, twice)
    .venv/bin/python benchmarks/decisive.py --from AUTO1 FIXED1 AUTO2 FIXED2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "runbooks" / "tiny_cpu_imperfect_sweep.yaml"
NAME = "decisive"
DRAFT = "tiny_eagle_imperfect"
LOOKAHEADS = [1, 2, 3, 5]
CONCURRENCIES = [1, 4]
DESIGNS = ["auto", "fixed", "auto", "fixed"]  # alternated: drifting load lands on both
RUNS_TARGET, TIME_TARGET = 0.50, 0.60  # auto's share of the fixed design's counted runs / benchmark time


def runbook(max_repeats: int, port: int, shipped: Path = SHIPPED, revisit: bool = False) -> dict:
    """The generated runbook: the shipped imperfect sweep's env, overrides (its port replaced),
    warm-up and client flags, over lookahead 1, 2, 3, 5, measured until decided (up to
    ``max_repeats``); its compare step is left out."""
    source = yaml.safe_load(shipped.read_text())
    sweep = next(s for s in source["steps"] if s.get("kind") == "sweep")
    overrides = [o for o in source.get("overrides", []) if not str(o).startswith("serve.port=")]
    step = {"id": "sweep", "kind": "sweep",
            "matrix": {"draft": ["none", DRAFT], "lookahead": list(LOOKAHEADS),
                       "bench.max_concurrency": list(CONCURRENCIES)},
            "repeats": "auto", "max_repeats": max_repeats, "warmup": sweep.get("warmup", 0)}
    if revisit:
        step["revisit"] = True
    if sweep.get("extra_args"):
        step["extra_args"] = list(sweep["extra_args"])
    return {"name": NAME,
            "description": (f"{DRAFT} lookahead {LOOKAHEADS} and no speculation x concurrency {CONCURRENCIES}, "
                            f"measured until decided or a fixed number of runs (benchmarks/decisive.py)."),
            "env": dict(source.get("env") or {}),
            "overrides": [*overrides, f"serve.port={port}"],
            "steps": [step]}


# -- one run directory, read ----------------------------------------------------------------
@dataclass(frozen=True)
class Choice:
    """What a run recommends for one draft at one concurrency (sweep.json's ``choices``)."""

    recommended: str | None  # a point id
    label: str | None  # "k=2", "no speculation"
    decided: bool
    undecided_against: tuple[str, ...]

    def text(self) -> str:
        if self.recommended is None:
            return "nothing measured"
        if self.decided:
            return f"{self.label}, decided"
        return f"{self.label}, undecided" + (f" against {', '.join(self.undecided_against)}"
                                              if self.undecided_against else "")


@dataclass
class Cell:
    """One concurrency of one run's sweep.json."""

    choices: dict[str, Choice]  # draft -> its choice
    verdicts: dict[str, str | None]  # lookahead label -> verdict against no speculation
    comparisons: dict[tuple[str, str], str]  # (first, second) point ids -> faster / slower / undecided
    names: dict[str, str]  # point id -> its label


@dataclass
class Summary:
    """What one run directory says about its cost and its answers."""

    run_dir: Path
    design: str  # "auto" (it has settle steps) or "fixed"
    counted_runs: int
    points: int  # points with a record
    server_starts: int
    not_started: dict[str, str]  # serve step id -> why it did not start here
    bench_seconds: float
    start_seconds: float
    stops: dict[str, int]  # stop reason -> points (repeats: auto)
    cells: dict[int, Cell]  # concurrency -> its answers


def _label(row: dict) -> str:
    k = row.get("lookahead")
    return "no speculation" if k is None else f"k={k}"


def read_cells(sweep_json: Path) -> dict[int, Cell]:
    """Each concurrency's recommendation, verdicts and comparisons from a sweep step's sweep.json
    (``sweep_json.to_record``); empty when it is missing or unreadable."""
    try:
        data = json.loads(Path(sweep_json).read_text())
    except (OSError, ValueError):
        return {}
    cells: dict[int, Cell] = {}
    for at in data.get("concurrency") or []:
        if at.get("category"):  # a category sweep's cells are not this benchmark's
            continue
        rows = at.get("rows") or []
        names = {r["id"]: _label(r) for r in rows}
        if at.get("baseline"):
            names[at["baseline"]] = "no speculation"
        choices = {draft: Choice(c.get("recommended"), c.get("label"), bool(c.get("decided")),
                                 tuple(c.get("undecided_against") or ()))
                   for draft, c in (at.get("choices") or {}).items()}
        cells[int(at["concurrency"])] = Cell(
            choices, {_label(r): r.get("verdict") for r in sorted(rows, key=lambda r: r.get("lookahead") or 0)},
            {(c["first"], c["second"]): c["verdict"] for c in at.get("comparisons") or []}, names)
    return cells


def read_summary(run_dir: Path) -> Summary:
    """A run directory's summary (status.json, each point's record.json, the sweep step's
    sweep.json); ValueError naming what is missing."""
    from llama4spec.results.bench import read

    run_dir = Path(run_dir)
    try:
        status = json.loads((run_dir / "status.json").read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{run_dir}: no readable status.json ({err})") from None
    steps = [s for s in status.get("steps") or [] if isinstance(s, dict)]

    def seconds(*kinds: str) -> float:
        return sum(float(s.get("seconds") or 0.0) for s in steps if s.get("kind") in kinds)

    serves = [s for s in steps if s.get("kind") == "serve"]
    started = [s for s in serves if s.get("status") == "done" and not s.get("resumed")]
    not_started = {s["id"]: (f"{s.get('status')}: {s.get('reason') or s.get('error') or 'no reason recorded'}"
                             if s.get("status") in ("skipped", "failed") else
                             "earlier run" if s.get("resumed") else str(s.get("status")))
                   for s in serves if s not in started}
    counted, points, stops = 0, 0, {}
    for s in steps:
        record = read(run_dir / s["id"] / "record.json") if s.get("kind") == "bench" else None
        if record is None:
            continue
        counted, points = counted + record.repeats, points + 1
        if record.stop:
            stops[record.stop["reason"]] = stops.get(record.stop["reason"], 0) + 1
    sweep = next((s["id"] for s in steps if s.get("kind") == "sweep"), "sweep")
    return Summary(run_dir, "auto" if any(s.get("kind") == "settle" for s in steps) else "fixed", counted, points,
                   len(started), not_started, seconds("bench", "settle"), seconds("serve"), stops,
                   read_cells(run_dir / sweep / "sweep.json"))


# -- comparing runs --------------------------------------------------------------------------
DECIDED = ("faster", "slower")
FLIP = {"faster": "slower", "slower": "faster"}


@dataclass(frozen=True)
class Finding:
    """A cell (one concurrency of two runs) and what was found there."""

    concurrency: int
    what: tuple[str, ...]


def compare_runs(a: Summary, b: Summary, a_name: str, b_name: str) -> tuple[list[Finding], list[Finding]]:
    """At each concurrency both runs report: (contradictions, exactly one undecided). A contradiction
    is a decided answer of ``a`` against a decided answer of ``b``: both recommendations of a draft
    decided and different, or a comparison of two settings decided in opposite directions."""
    contradictions, one_undecided = [], []
    for c in sorted(set(a.cells) & set(b.cells)):
        ca, cb = a.cells[c], b.cells[c]
        against, open_ = [], []
        for draft in [d for d in ca.choices if d in cb.choices]:
            x, y = ca.choices[draft], cb.choices[draft]
            if x.recommended is None or y.recommended is None:
                continue
            if x.decided and y.decided and x.recommended != y.recommended:
                against.append(f"{a_name} decided {x.label}, {b_name} decided {y.label}")
            elif x.decided != y.decided:
                open_.append(f"{a_name} {x.text()}; {b_name} {y.text()}")
        for (first, second), verdict in ca.comparisons.items():
            other = cb.comparisons.get((first, second)) or FLIP.get(cb.comparisons.get((second, first)) or "")
            if verdict in DECIDED and other in DECIDED and other != verdict:
                against.append(f"{ca.names.get(first, first)} against {ca.names.get(second, second)}: "
                               f"{verdict} in {a_name}, {other} in {b_name}")
        if against:
            contradictions.append(Finding(c, tuple(against)))
        if open_:
            one_undecided.append(Finding(c, tuple(open_)))
    return contradictions, one_undecided


def share(part: float, whole: float) -> float | None:
    return part / whole if whole else None


# -- text ------------------------------------------------------------------------------------
def run_text(name: str, s: Summary) -> str:
    lines = [f"{name} ({'repeats: auto' if s.design == 'auto' else 'fixed repeats'}): {s.run_dir}",
             f"  counted runs {s.counted_runs} over {s.points} points; server starts {s.server_starts}"
             + (f" (not started: {'; '.join(f'{k}: {v}' for k, v in s.not_started.items())})" if s.not_started else ""),
             f"  benchmark time {s.bench_seconds:.0f} s (bench and settle steps); start time {s.start_seconds:.0f} s "
             f"(serve steps)"]
    if s.stops:
        lines.append("  stopped: " + ", ".join(f"{reason} {n}" for reason, n in s.stops.items()))
    if not s.cells:
        lines.append("  no sweep.json: no recommendation")
    for c, cell in sorted(s.cells.items()):
        choice = "; ".join(ch.text() if len(cell.choices) == 1 else f"{d}: {ch.text()}" for d, ch in cell.choices.items())
        verdicts = ", ".join(f"{k} {v or '-'}" for k, v in cell.verdicts.items())
        lines.append(f"  c={c}: recommended {choice or '-'}; against no speculation: {verdicts or '-'}")
    return "\n".join(lines)


def _findings(title: str, found: list[tuple[str, Finding]], cells: int, target: str = "") -> list[str]:
    lines = [f"  {title}: {len(found)} of {cells} cells{target}"]
    for pair, f in found:
        lines += [f"    {pair}, c={f.concurrency}: {w}" for w in f.what]
    return lines


def comparison_text(runs: list[tuple[str, Summary]]) -> str:
    autos = [(n, s) for n, s in runs if s.design == "auto"]
    fixeds = [(n, s) for n, s in runs if s.design == "fixed"]
    against: list[tuple[str, Finding]] = []
    open_: list[tuple[str, Finding]] = []
    cells = 0
    for an, a in autos:
        for fn, f in fixeds:
            found, undecided = compare_runs(a, f, an, fn)
            cells += len(set(a.cells) & set(f.cells))
            against += [(f"{an} x {fn}", x) for x in found]
            open_ += [(f"{an} x {fn}", x) for x in undecided]
    lines = ["auto against fixed, at each concurrency of each pair of runs (a cell):"]
    lines += _findings("a decided auto answer contradicts a decided fixed one", against, cells,
                       " (target: none)" + (": met" if not against else ": MISSED"))
    lines += _findings("exactly one design undecided", open_, cells)
    for design, members in (("auto", autos), ("fixed", fixeds)):
        pairs = [(x, y) for i, x in enumerate(members) for y in members[i + 1:]]
        found = [(f"{xn} x {yn}", f) for (xn, x), (yn, y) in pairs for f in compare_runs(x, y, xn, yn)[0]]
        lines += _findings(f"{design} against {design}: decided answers that contradict", found,
                           sum(len(set(x.cells) & set(y.cells)) for (_, x), (_, y) in pairs))
    lines.append("cost, auto runs against fixed runs (summed over each design's runs):")
    for what, key, target in (("counted runs", "counted_runs", RUNS_TARGET), ("benchmark time", "bench_seconds", TIME_TARGET),
                              ("start time", "start_seconds", None), ("server starts", "server_starts", None)):
        a_sum, f_sum = (sum(getattr(s, key) for _, s in m) for m in (autos, fixeds))
        part = share(a_sum, f_sum)
        unit = " s" if key.endswith("seconds") else ""
        text = f"  {what}: auto {a_sum:.0f}{unit}, fixed {f_sum:.0f}{unit}"
        if part is not None:
            text += f": {100 * part:.1f}%"
            if target is not None:
                text += f" (target at most {100 * target:.0f}%: {'met' if part <= target else 'MISSED'})"
        lines.append(text)
    return "\n".join(lines)


def report(run_dirs: list[Path]) -> str:
    runs, counts = [], {"auto": 0, "fixed": 0}
    for d in run_dirs:
        s = read_summary(d)
        counts[s.design] += 1
        runs.append((f"{s.design} {counts[s.design]}", s))
    return "\n\n".join([*(run_text(n, s) for n, s in runs), comparison_text(runs)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10,
                        help="the fixed design's runs a point, and auto's max_repeats (default 10)")
    parser.add_argument("--port", type=int, default=8769, help="the servers' port (default 8769)")
    parser.add_argument("--runs-dir", default="runs", help="where the four run records go (default runs/)")
    parser.add_argument("--dry-run", action="store_true", help="print the plans of both designs only (no engine)")
    parser.add_argument("--revisit", action="store_true",
                        help="auto with revisit: true (the servers of points left undecided start once more)")
    parser.add_argument("--auto-only", action="store_true",
                        help="run the auto design twice and no fixed one (compare with earlier fixed runs by --from)")
    parser.add_argument("--from", dest="from_dirs", nargs=4, metavar=("AUTO1", "FIXED1", "AUTO2", "FIXED2"),
                        help="only recompute the tables from four existing run directories")
    args = parser.parse_args()

    if args.from_dirs:
        dirs = [Path(d) for d in args.from_dirs]
        try:
            designs = [read_summary(d).design for d in dirs]
            if designs != DESIGNS:
                parser.error(f"--from takes AUTO1 FIXED1 AUTO2 FIXED2; these are {' '.join(designs)} "
                             f"(a run with settle steps is auto)")
            print(report(dirs))
        except ValueError as err:
            print(err, file=sys.stderr)
            return 2
        return 0
    if not 2 <= args.repeats <= 100:
        parser.error("--repeats: from 2 to 100")

    runs_root = Path(args.runs_dir) / NAME
    made: list[Path] = []
    code = 0
    with tempfile.TemporaryDirectory(prefix="decisive-") as tmp:
        path = Path(tmp) / f"{NAME}.yaml"
        path.write_text(json.dumps(runbook(args.repeats, args.port, revisit=args.revisit), indent=1) + "\n")  # JSON is YAML
        designs = ["auto", "auto"] if args.auto_only else DESIGNS
        for design in (designs[:2] if args.dry_run else designs):
            argv = [sys.executable, "-m", "llama4spec", "run", str(path), "--runs-dir", args.runs_dir,
                    *(["--repeats", str(args.repeats)] if design == "fixed" else []),
                    *(["--dry-run"] if args.dry_run else [])]
            before = set(runs_root.glob("*")) if runs_root.exists() else set()
            began = time.monotonic()
            rc = subprocess.run(argv).returncode
            elapsed = time.monotonic() - began
            if args.dry_run:
                code = code or rc
                continue
            new = sorted(set(runs_root.glob("*")) - before)
            if not new:
                print(f"{' '.join(argv)} exited {rc} and left no run directory under {runs_root}")
                return rc or 1
            made.append(new[-1])
            code = code or rc
            print(f"\n{design}: exit {rc}, wall time {elapsed / 60:.1f} min; record {new[-1]}\n")
            print(run_text(design, read_summary(new[-1])) + "\n")
    if args.dry_run:
        return code
    if args.auto_only:
        print("the fixed runs to compare with: --from AUTO1 FIXED1 AUTO2 FIXED2 with these two as AUTO1, AUTO2")
        return code
    print(report(made))
    print(f"\nrecompute: .venv/bin/python benchmarks/decisive.py --from {' '.join(map(str, made))}")
    return code


if __name__ == "__main__":
    sys.exit(main())
