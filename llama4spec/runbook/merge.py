"""``llama4spec report``: a run's reports (each merging step's, through its kind's ``merge_part``)
and summary rebuilt from its records alone (no engine), and points measured in several run
directories merged into one.

A run directory holds ``plan.json`` (its steps), ``status.json`` and one directory per step; the
points of server groups run elsewhere (``run --only-group``, Slurm jobs) lie in run directories
of their own under ``<run>/groups/``. Every bench step's directory holds its ``record.json`` and
the ``config.yaml`` it was measured with, which is all a report needs.

Merging: a point (a bench step id) measured in more than one place is one point with the runs of
all of them, but only if they measured the same thing: the same composed config and client
settings, apart from where they ran (host, port, URL, devices, node, cluster) and the local path
of a model whose files are identical (the records carry each local model's fingerprint).
Otherwise the merge is refused, naming the keys that differ.
"""

from __future__ import annotations

import dataclasses

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from llama4spec.errors import UserError
from llama4spec.files import json_or_none, outside, plain, shown, write_atomic, write_json
from llama4spec.records import points
from llama4spec.records.host import host_or_problem
from llama4spec.records.plan import PlanRecord, checked as checked_plan
from llama4spec.results import bench as bench_record
from llama4spec.results.bench import BenchRecord
from llama4spec.runbook.recorder import Recorder
from llama4spec.runbook.rundir import (STATUS, Measured, bench_files, config_or_problem, flatten, is_step_id, not_run,
                                       status_or_problem, vllm_runs)
from llama4spec.runbook.spec import MergePart
from llama4spec.runbook.steps import named, traits_of

GROUPS = "groups"  # <run>/groups/<group>/: the run directory of one server group run on its own
# Keys that say where a point ran, not what it measured.
LOCATION_PREFIXES = ("serve.host", "serve.port", "cluster.", "hydra.")
LOCATION_ENV = ("CUDA_VISIBLE_DEVICES", "VLLM_CPU_OMP_THREADS_BIND", "VLLM_HOST_IP", "MASTER_ADDR", "MASTER_PORT",
                "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
MODEL_KEYS = ("target.model", "target.tokenizer", "draft.model")
ARGV_LOCATION = ("--base-url", "--host", "--port", "--result-dir", "--result-filename")


@dataclass
class Source:
    """One run directory given to ``report``, with the group run directories under it."""

    dir: Path
    status: dict[str, Any]
    plan: list[dict[str, Any]]
    runs: list[Path] = field(default_factory=list)  # where step directories lie: the run, then its groups
    record: PlanRecord | None = None  # plan.json through its model (``records.plan``)

    def step(self, step_id: str) -> dict[str, Any] | None:
        return next((s for s in self.plan if s.get("id") == step_id), None)

    def kinds(self) -> dict[str, str]:
        if self.record is not None:
            return self.record.kinds()
        return {str(s.get("id")): str(s.get("kind")) for s in self.plan}


def load(run_dir: Path) -> Source:
    """A run directory's records, checked as planning checks its input; UserError naming the fix
    when it is none (one line)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run directory; give one under runs/<runbook>/")
    status, problem = status_or_problem(run_dir)
    plan, plan_unreadable = json_or_none(run_dir / "plan.json")
    record = None
    if plan is not None:
        try:
            record = checked_plan(plan, plain(str(run_dir / "plan.json")))
        except UserError as err:
            plan_unreadable = str(err)
    if status is None and problem is None and plan is None and plan_unreadable is None:
        raise UserError(f"{run_dir}: no {STATUS} and plan.json there, so it is not a run directory of llama4spec; "
                        f"give one under runs/<runbook>/")
    problem = problem or plan_unreadable or (f"{run_dir}: no {STATUS} there" if status is None else None) or \
        (f"{run_dir}: no plan.json there" if record is None else None)
    if problem is not None or status is None or record is None:
        raise UserError(f"{problem} (give a run directory of llama4spec under runs/<runbook>/)")
    root = run_dir / GROUPS
    groups = sorted(d for d in root.iterdir() if is_step_id(d.name) and d.is_dir() and (d / STATUS).is_file()) \
        if root.is_dir() and not root.is_symlink() else []
    return Source(run_dir, status, plan, [run_dir, *groups], record)


def measured_here(source: Source, step_id: str, problems: list[str] | None = None) -> list[Measured]:
    """Every counted record of bench step ``step_id`` in a run directory and its group runs (with
    the config.yaml it was measured with: a record without one cannot say what it measured).
    ``problems``: a line for each record or config that is not one this tool wrote (left out)."""
    found = []
    for where in source.runs:
        directory = where / step_id
        record, problem = bench_record.read_record(bench_files(directory)["record"])
        config, config_problem = config_or_problem(directory / "config.yaml")
        problem = problem or (config_problem if record is not None else None)
        if problem is not None and problems is not None:
            problems.append(problem)
        if record is not None and record.counted and config is not None:
            found.append(Measured(step_id, config, record, directory))
    return found


def identity(m: Measured) -> dict[str, Any]:
    """What a point measured: its config (dotted keys) and benchmark command, without where it ran."""
    out: dict[str, Any] = {}
    for key, value in flatten(m.config).items():
        if key.startswith(LOCATION_PREFIXES) or (key.startswith("env.") and key[4:] in LOCATION_ENV):
            continue
        if key in MODEL_KEYS and m.record.models.get(key):
            value = m.record.models[key]  # the files, not where they lie
        out[f"config {key}"] = value
    argv = list(m.record.argv)
    for flag in ARGV_LOCATION:
        while flag in argv[:-1]:
            i = argv.index(flag)
            del argv[i:i + 2]
    model = m.config.get("target", {}).get("model") if isinstance(m.config.get("target"), dict) else None
    tokenizer = m.config.get("target", {}).get("tokenizer") if isinstance(m.config.get("target"), dict) else None
    for flag, key, path in (("--model", "target.model", model), ("--tokenizer", "target.tokenizer", tokenizer)):
        if flag in argv[:-1] and m.record.models.get(key) and argv[argv.index(flag) + 1] == path:
            argv[argv.index(flag) + 1] = m.record.models[key]
    out["benchmark command"] = " ".join(argv[3:])  # after `vllm bench serve`
    out["warm-up requests"] = m.record.warmup
    return out


def differing(a: Measured, b: Measured) -> list[str]:
    ia, ib = identity(a), identity(b)
    return [k for k in dict.fromkeys([*ia, *ib]) if ia.get(k) != ib.get(k)]


def merge(found: list[Measured]) -> Measured:
    """One point from its records in several places (their runs together); UserError when they
    measured different things."""
    first = found[0]
    for other in found[1:]:
        keys = differing(first, other)
        if keys:
            raise UserError(f"point '{first.id}' was measured differently in {first.where} and {other.where} "
                            f"({', '.join(keys[:8])}{', ...' if len(keys) > 8 else ''} differ); merge only runs of "
                            f"the same settings, or give them separately")
    if len(found) == 1:
        return first
    runs, offset = [], 0  # each place's runs are server starts of their own: numbered on after the last
    for m in found:
        mine = [dataclasses.replace(r, start=offset + r.start) for r in (m.record.runs or [m.record])]
        runs += mine
        offset = max(r.start for r in mine)
    record = BenchRecord.of_runs(first.record.label, runs, url=None, argv=first.record.argv,
                                 lookahead=first.record.lookahead, warmup=first.record.warmup)
    record.models = dict(first.record.models)
    return Measured(first.id, first.config, record, first.where)


def collect(sources: list[Source], ids: list[str], problems: dict[str, str] | None = None) -> dict[str, Measured]:
    """Point id -> its records merged; ``problems``: point id -> why a record of it was left out."""
    out: dict[str, Measured] = {}
    for pid in ids:
        lines: list[str] = []
        found = [m for s in sources for m in measured_here(s, pid, lines)]
        if found:
            out[pid] = merge(found)
        elif lines and problems is not None:
            problems[pid] = f"record left out: {lines[0]}"
    return out


def _hosts(sources: list[Source]) -> list[str]:
    """One line per distinct machine the runs (and groups) ran on, when there is more than one."""
    seen: dict[str, list[str]] = {}
    for s in sources:
        for where in s.runs:
            if not any(bench_files(d)["record"].is_file() for d in where.iterdir() if d.is_dir()):
                continue  # measured nothing here (a launcher's own directory): not a machine points ran on
            record, _ = host_or_problem(where / "host.json")  # one this tool did not write: an unknown machine
            info = record.host if record is not None else None
            kind = ", ".join(k for k in (info.machine, info.kind()) if k) if info is not None else ""
            kind = kind or "unknown machine"
            seen.setdefault(kind, []).append(str(where))
    if len(seen) <= 1:
        return []
    return [f"points ran on different machine types: {kind} ({', '.join(dirs)})" for kind, dirs in seen.items()]


@dataclass
class Rebuild:
    """What the merging kinds' parts of ``report`` read and write (``spec.MergePart``)."""

    sources: list[Source]
    out: Path
    in_place: bool
    console: Console
    measured: dict[str, Measured] = field(default_factory=dict)  # point id -> its records merged
    reasons: dict[str, str] = field(default_factory=dict)  # point id -> why it has no counted record
    failures: dict[str, str] = field(default_factory=dict)  # step id -> why it did not run (the statuses)
    comparisons: dict[str, str] = field(default_factory=dict)  # step id -> the report the status keeps

    def collect(self, ids: list[str], problems: dict[str, str] | None = None) -> dict[str, Measured]:
        return collect(self.sources, ids, problems)


def merge_parts(sources: list[Source]) -> dict[str, MergePart]:
    """Step id -> its part of the report, for every step of a kind that merges (its ``merge_part``),
    in the order of the plans, first source first."""
    kinds: dict[str, str] = {}
    for s in sources:
        for sid, name in s.kinds().items():
            kinds.setdefault(sid, name)  # one kind for each step id (refuse_unrelated)
    parts = {}
    for sid, name in kinds.items():
        of = named(name)
        part = of.merge_part(sid, sources) if of is not None and of.traits.merges and of.merge_part else None
        if part is not None:
            parts[sid] = part
    return parts


def rebuild(run_dirs: list[Path], out: Path | None, console: Console) -> int:
    """Rebuild (or, from several run directories, merge) the merging steps' reports (each kind's
    ``merge_part``, with what it says of the merge: its ``notes``) and the summary from the records
    alone; write them into ``out`` (default: the one run directory given). Returns 0, or 1 when a
    point (or a setting) a report needs has no counted record anywhere."""
    seen: dict[Path, Path] = {}
    for d in run_dirs:
        if Path(d).resolve() in seen:
            raise UserError(f"{d} is given twice (as {seen[Path(d).resolve()]} too); its runs would count twice")
        seen[Path(d).resolve()] = Path(d)
    sources = [load(d) for d in run_dirs]
    refuse_unrelated(sources)
    parts = merge_parts(sources)
    if out is None:
        if len(sources) > 1:
            raise UserError("several run directories are merged into a new one: give --out DIR")
        out = sources[0].dir
    out = Path(out)
    recorder = Recorder(out)  # what the run directories hold is redacted already
    in_place = any(out.resolve() == s.dir.resolve() for s in sources)
    if in_place and len(sources) > 1:
        raise UserError(f"--out {out} is one of the run directories being merged; give a new directory")
    if not in_place:
        refuse_foreign(out)
    first = sources[0]
    ids = list(dict.fromkeys(pid for part in parts.values() for pid in part.points))
    written = [sid for part in parts.values() for sid in part.writes]
    refuse_escapes(out, [*parts, *([] if in_place else [*ids, *written])])
    ctx = Rebuild(sources, out, in_place, console)
    left_out: dict[str, str] = {}
    ctx.measured = collect(sources, ids, left_out)  # a point measured differently is named here
    refuse_other_settings(sources)
    ctx.failures = {k: v for s in sources for k, v in not_run(s.status.get("steps") or []).items()}
    for part in parts.values():  # what each reads (and may refuse) before anything is written
        part.read(ctx)
    for s in sources:
        ctx.reasons.update(not_run(s.status.get("steps") or []))
    ctx.reasons.update(left_out)
    for pid in ctx.measured:
        ctx.reasons.pop(pid, None)
    missing = sum(part.write(ctx) for part in parts.values())
    notes = [*(n for part in parts.values() for n in part.notes), *_hosts(sources)]  # a sweep of two designs, say
    if in_place:
        status = dict(first.status)
    else:
        status = _merged_status(sources, out, ctx.measured)
        _write_points(out, ctx.measured)
        recorder.copy_start(first.dir, first.plan)
    status["comparisons"] = {**(status.get("comparisons") or {}), **ctx.comparisons}
    status["rebuilt"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if notes:
        status["notes"] = notes
    recorder.status(status, str(status.get("description") or ""), [f"- {n}" for n in notes])
    for note in notes:
        console.print(note, markup=False, highlight=False, soft_wrap=True)
    return 1 if missing else 0


def refuse_unrelated(sources: list[Source]) -> None:
    """Runs merged into one report must be runs of one runbook with the same settings: the same
    runbook and command-line overrides, one kind for each step id (and
    what each merging kind's ``merge_part`` refuses).
    UserError (one line) naming the first difference and the fix; nothing is reduced to the first."""
    if len(sources) < 2:
        return
    first = sources[0]
    where = lambda s: plain(str(s.dir))  # noqa: E731
    for other in sources[1:]:
        mine, theirs = first.status.get("runbook"), other.status.get("runbook")
        if mine is not None and theirs is not None and mine != theirs:
            raise UserError(f"{where(first)} and {where(other)} are runs of different runbooks ({shown(mine)} and "
                            f"{shown(theirs)}); merge only runs of one runbook, or report each on its own")
    kinds: dict[str, tuple[str, Source]] = {}
    for s in sources:
        for sid, its in s.kinds().items():
            seen = kinds.setdefault(sid, (its, s))
            if seen[0] != its:
                raise UserError(f"step '{sid}' is a {plain(seen[0], 40)} step in {where(seen[1])} and a "
                                f"{plain(its, 40)} step in {where(s)}; merge only runs of one runbook, or report "
                                f"each on its own")


def _measuring(overrides: Any) -> list[str]:
    """A run's command-line overrides that say what it measured (not where it ran)."""
    return sorted(o for o in overrides if isinstance(o, str)
                  and not o.lstrip("+~").startswith(LOCATION_PREFIXES)) if isinstance(overrides, list) else []


def refuse_other_settings(sources: list[Source]) -> None:
    """Runs whose command lines set what they measure differently (another target, another
    benchmark) are not merged, even when they share no point; UserError naming both."""
    first = sources[0]
    for other in sources[1:]:
        mine, theirs = _measuring(first.status.get("overrides")), _measuring(other.status.get("overrides"))
        if mine != theirs:
            raise UserError(f"{plain(str(first.dir))} and {plain(str(other.dir))} were run with different settings "
                            f"({shown(' '.join(mine) or 'no overrides')} and {shown(' '.join(theirs) or 'no overrides')}); "
                            f"merge only runs of one runbook with the same settings, or report each on its own")


def refuse_foreign(out: Path) -> None:
    """``--out`` must be new, empty, or a run directory this tool wrote (a merge made before): files
    of someone else's are never overwritten."""
    if not out.exists() and not out.is_symlink():
        return
    if out.is_symlink() or not out.is_dir():
        raise UserError(f"--out {out}: is {'a symlink' if out.is_symlink() else 'a file'}, not a directory; "
                        f"give a new directory")
    if next(out.iterdir(), None) is None:
        return
    status, problem = status_or_problem(out)
    if status is None:
        raise UserError(f"--out {out}: holds files this tool did not write ({problem or f'no {STATUS}'}); give a new "
                        f"or empty directory (report never overwrites them)")


def refuse_escapes(out: Path, step_ids: list[str]) -> None:
    """Nothing is written outside the named output directory: no step's directory under ``out``, and
    no directory at any level below ``out`` (a search's ``probes``, a probe's ``rate=R``), may be a
    symlink or lead outside it once resolved. Links are listed, never followed."""
    def refuse(target: Path) -> None:
        raise UserError(f"{plain(str(target))}: is a symlink (or leads outside {plain(str(out))}); report writes only "
                        f"inside the output directory: remove the link or give another --out")

    for sid in step_ids:
        target = out / sid
        if target.is_symlink() or outside(out, target / "x"):
            refuse(target)
    if not out.is_dir() or out.is_symlink():
        return
    for where, dirs, names in os.walk(out):  # followlinks=False: a link to a directory is listed, not entered
        for name in [*dirs, *names]:
            path = Path(where) / name
            if path.is_symlink() and (name in dirs or path.is_dir() or not path.exists()):
                refuse(path)
            if name in dirs and outside(out, path / "x"):
                refuse(path)


def _merged_status(sources: list[Source], out: Path, measured: dict[str, Measured]) -> dict[str, Any]:
    first = sources[0].status
    steps = []
    for step in sources[0].plan:
        sid = str(step.get("id"))
        entry: dict[str, Any] = {"id": sid, "kind": step.get("kind")}
        if traits_of(step.get("kind")).benchmarks:
            m = measured.get(sid)
            entry["status"] = "done" if m else "missing"
            if m:
                entry["result"] = m.record.figures()
                entry["repeats"] = m.record.repeats
        else:
            entry["status"] = "merged"
        steps.append(entry)
    return {"runbook": first.get("runbook"), "description": first.get("description"), "run_dir": str(out),
            "status": "merged", "started": first.get("started"),
            "merged_from": [str(s.dir) for s in sources], "steps": steps, "comparisons": {}}


def _write_points(out: Path, measured: dict[str, Measured]) -> None:
    """Each merged point as a bench step directory: record.json, config.yaml, and summary.json in
    vLLM's sweep format (so the merged directory is itself a run directory for ``report`` and for
    ``vllm bench sweep plot``)."""
    import yaml

    for pid, m in measured.items():
        files = bench_files(out / pid)
        m.record.write(files["record"])
        points.write(files["points"], vllm_runs(m.config, m.record))
        write_atomic(out / pid / "config.yaml", yaml.safe_dump(m.config, sort_keys=False))
