"""``llama4spec report``: a run's sweep reports, comparisons and summary rebuilt from its records
alone (no engine), and points measured in several run directories merged into one.

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
from llama4spec.results import bench as bench_record
from llama4spec.results.bench import BenchRecord
from llama4spec.runbook.recorder import Recorder
from llama4spec.runbook.rundir import (STATUS, Measured, bench_files, config_or_problem, flatten, is_step_id, not_run,
                                       status_or_problem, vllm_runs)
from llama4spec.runbook.steps import traits_of

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

    def step(self, step_id: str) -> dict[str, Any] | None:
        return next((s for s in self.plan if s.get("id") == step_id), None)

    def kinds(self) -> dict[str, str]:
        return {str(s.get("id")): str(s.get("kind")) for s in self.plan}


def _json(path: Path) -> Any:
    return json_or_none(path)[0]


def plan_problem(plan: Any, where: str) -> str | None:
    """Why a plan.json read back is not one this tool wrote (None when it is): every entry a
    mapping with a step id, a kind, and references (``needs``, ``inputs``) of the right types."""
    if not isinstance(plan, list):
        return f"{where}: not a plan (a JSON list of steps); it is not a record this tool wrote"
    for n, step in enumerate(plan, 1):
        if not isinstance(step, dict) or not is_step_id(step.get("id")):
            got = shown(step.get("id")) if isinstance(step, dict) else type(step).__name__
            return f"{where}: step {n} has no valid step id ({got}); it is not a record this tool wrote"
        needs, inputs = step.get("needs", []), step.get("inputs", {})
        if not isinstance(step.get("kind"), str) or not isinstance(needs, list) or \
                not all(is_step_id(x) for x in needs) or not isinstance(inputs, dict) or \
                not all(isinstance(v, str) for v in inputs.values()):
            return (f"{where}: step '{step['id']}' has a kind, needs or inputs of the wrong type; it is not a "
                    f"record this tool wrote")
    return None


def load(run_dir: Path) -> Source:
    """A run directory's records, checked as planning checks its input; UserError naming the fix
    when it is none (one line)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run directory; give one under runs/<runbook>/")
    status, problem = status_or_problem(run_dir)
    plan, plan_unreadable = json_or_none(run_dir / "plan.json")
    if status is None and problem is None and plan is None and plan_unreadable is None:
        raise UserError(f"{run_dir}: no {STATUS} and plan.json there, so it is not a run directory of llama4spec; "
                        f"give one under runs/<runbook>/")
    problem = problem or plan_unreadable or (f"{run_dir}: no {STATUS} there" if status is None else None) or \
        (f"{run_dir}: no plan.json there" if plan is None else None) or plan_problem(plan, plain(str(run_dir / "plan.json")))
    if problem is not None:
        raise UserError(f"{problem} (give a run directory of llama4spec under runs/<runbook>/)")
    root = run_dir / GROUPS
    groups = sorted(d for d in root.iterdir() if is_step_id(d.name) and d.is_dir() and (d / STATUS).is_file()) \
        if root.is_dir() and not root.is_symlink() else []
    return Source(run_dir, status, plan, [run_dir, *groups])


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


def _sweeps(sources: list[Source]) -> dict[str, list[str]]:
    """Sweep step id -> its points (bench step ids), over every source in order."""
    sweeps: dict[str, list[str]] = {}
    for s in sources:
        kinds = s.kinds()
        for step in s.plan:
            if step.get("kind") == "sweep":
                ids = [n for n in step.get("needs") or [] if traits_of(kinds.get(n)).benchmarks]
                sweeps[str(step["id"])] = list(dict.fromkeys([*sweeps.get(str(step["id"]), []), *ids]))
    return sweeps


def _capacities(sources: list[Source]) -> dict[str, tuple[list[Any], str | None]]:
    """Capacity step id -> (its settings, the baseline's search step), from plan.json; each search
    read where it lies (the run directories and their groups, in order)."""
    from llama4spec.runbook.capacity.write_report import from_plan_record

    runs = [r for s in sources for r in s.runs]
    out: dict[str, tuple[list[Any], str | None]] = {}
    for s in sources:
        kinds = s.kinds()
        for step in s.plan:
            if step.get("kind") == "capacity" and str(step["id"]) not in out:
                out[str(step["id"])] = from_plan_record(step, kinds, runs)
    return out


def reference_medians(sources: list[Source], settings: list[Any]) -> dict[str, float] | None:
    """The medians, as its record is now, of the bench step a relative SLO names (its first
    search's search.json says which); None without one."""
    from llama4spec.runbook.capacity.write_report import SEARCH, medians_of, slo_basis

    for setting in settings:
        data, _ = json_or_none(setting.dir / SEARCH)
        step = slo_basis(data.get("slo")).get("relative_to") if isinstance(data, dict) else None
        if step:
            found = collect(sources, [step]) if is_step_id(step) else {}
            return medians_of(found[step].record) if step in found else None
    return None


def _write_searches(out: Path, found) -> None:
    """A merged run's searches (search.json and each probe's record) in directories of its own, so
    that the merged directory is itself a run directory for ``report`` and its page."""
    from llama4spec.runbook.capacity.write_report import SEARCH, probe_dir

    for setting in found.settings:
        search = found.searches.get(setting.name)
        if search is None or setting.dir.parent == out:
            continue
        data, _ = json_or_none(setting.dir / SEARCH)
        write_json(out / setting.id / SEARCH, data)
        for probe in search.probes:
            record = bench_record.read(probe_dir(setting.dir, probe.rate) / "record.json")
            if record is not None:
                record.write(probe_dir(out / setting.id, probe.rate) / "record.json")


def _designs(sources: list[Source]) -> dict[str, dict[str, Any]]:
    """Sweep step id -> how it measured (its plan.json's ``design``), the last source's."""
    out: dict[str, dict[str, Any]] = {}
    for s in sources:
        for step in s.plan:
            if step.get("kind") == "sweep" and isinstance(step.get("design"), dict):
                out[str(step["id"])] = {str(k): v for k, v in step["design"].items()
                                        if isinstance(v, (str, bool, int, float)) and len(str(v)) <= 300
                                        or k == "noise_prior" and isinstance(v, dict)}  # checked where read
    return out


def _compares(sources: list[Source]) -> dict[str, dict[str, str]]:
    """Compare step id -> {role: bench step id or file}, over every source in order."""
    out: dict[str, dict[str, str]] = {}
    for s in sources:
        kinds = s.kinds()
        for step in s.plan:
            if step.get("kind") == "compare" and isinstance(step.get("inputs"), dict):
                refs = {}
                for role, path in step["inputs"].items():
                    name = Path(str(path)).parent.name
                    refs[role] = name if traits_of(kinds.get(name)).benchmarks else str(path)
                out.setdefault(str(step["id"]), refs)
    return out


def _hosts(sources: list[Source]) -> list[str]:
    """One line per distinct machine the runs (and groups) ran on, when there is more than one."""
    seen: dict[str, list[str]] = {}
    for s in sources:
        for where in s.runs:
            if not any(bench_files(d)["record"].is_file() for d in where.iterdir() if d.is_dir()):
                continue  # measured nothing here (a launcher's own directory): not a machine points ran on
            data = _json(where / "host.json")
            info = data.get("host") if isinstance(data, dict) else None
            info = {k: v for k, v in info.items() if isinstance(v, (str, int, float))} if isinstance(info, dict) else {}
            kind = ", ".join(str(info[k]) for k in ("machine", "cpu", "gpus") if info.get(k)) or "unknown machine"
            seen.setdefault(kind, []).append(str(where))
    if len(seen) <= 1:
        return []
    return [f"points ran on different machine types: {kind} ({', '.join(dirs)})" for kind, dirs in seen.items()]


def rebuild(run_dirs: list[Path], out: Path | None, console: Console) -> int:
    """Rebuild (or, from several run directories, merge) the sweep reports, comparisons and summary
    from the records alone; write them into ``out`` (default: the one run directory given).
    Returns 0, or 1 when a point of a sweep has no counted record anywhere."""
    from llama4spec.runbook.capacity import write_report as capacity_report

    seen: dict[Path, Path] = {}
    for d in run_dirs:
        if Path(d).resolve() in seen:
            raise UserError(f"{d} is given twice (as {seen[Path(d).resolve()]} too); its runs would count twice")
        seen[Path(d).resolve()] = Path(d)
    sources = [load(d) for d in run_dirs]
    refuse_unrelated(sources)
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
    sweeps, compares = _sweeps(sources), _compares(sources)
    ids = list(dict.fromkeys(pid for points in sweeps.values() for pid in points))
    ids += [ref for refs in compares.values() for ref in refs.values() if ref not in ids and "/" not in ref]
    capacities = _capacities(sources)
    searched = [s.id for settings, _ in capacities.values() for s in settings]
    refuse_escapes(out, [*sweeps, *compares, *capacities, *([] if in_place else [*ids, *searched])])
    left_out: dict[str, str] = {}
    measured = collect(sources, ids, left_out)  # a point measured differently is named here
    refuse_other_settings(sources)
    failures = {k: v for s in sources for k, v in not_run(s.status.get("steps") or []).items()}
    searched_out = {cid: capacity_report.analyse(settings, baseline, failures, strict=True,  # read before any write
                                                 reference=reference_medians(sources, settings))
                    for cid, (settings, baseline) in capacities.items()}
    reasons: dict[str, str] = {}
    for s in sources:
        reasons.update(not_run(s.status.get("steps") or []))
    reasons.update(left_out)
    for pid in measured:
        reasons.pop(pid, None)
    comparisons: dict[str, str] = {}
    missing = _sweep_reports(sources, sweeps, measured, reasons, out, console, comparisons)
    missing += _capacity_reports(searched_out, out, in_place, console, comparisons)
    _compare_reports(compares, measured, out, console, comparisons)
    notes = _hosts(sources)
    if in_place:
        status = dict(first.status)
    else:
        status = _merged_status(sources, out, measured)
        _write_points(out, measured)
        recorder.copy_start(first.dir, first.plan)
    status["comparisons"] = {**(status.get("comparisons") or {}), **comparisons}
    status["rebuilt"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if notes:
        status["notes"] = notes
    recorder.status(status, str(status.get("description") or ""), [f"- {n}" for n in notes])
    for note in notes:
        console.print(note, markup=False, highlight=False, soft_wrap=True)
    return 1 if missing else 0


def _sweep_reports(sources: list[Source], sweeps: dict[str, list[str]], measured: dict[str, Measured],
                   reasons: dict[str, str], out: Path, console: Console, comparisons: dict[str, str]) -> int:
    """Each sweep's report rebuilt from its points' records into ``out``; returns the points missing."""
    from llama4spec.runbook.sweep import kind as sweep_step

    missing = 0
    beside = _colocation(sources, measured)
    designs = _designs(sources)
    for sid, points in sweeps.items():
        files = sweep_step.artifacts(out / sid)
        text, record = sweep_step.report_points(points, measured, files, console, reasons,
                                                {pid: beside[pid] for pid in points if pid in beside},
                                                designs.get(sid))
        comparisons[sid] = sweep_step.linked(text, sid)
        missing += len(record["missing"])
    return missing


def _capacity_reports(searched_out: dict[str, Any], out: Path, in_place: bool, console: Console,
                      comparisons: dict[str, str]) -> int:
    """Each capacity step's report from its searches (read before), written into ``out`` with the
    searches themselves when ``out`` is a new directory; returns the settings missing."""
    from llama4spec.runbook.capacity import write_report as capacity_report

    missing = 0
    for cid, found in searched_out.items():
        settings = found.settings
        files = {"report": out / cid / "report.md", "analysis": out / cid / "capacity.json",
                 **{f"latency-{s.id}": out / cid / f"latency-{s.id}.png" for s in settings}}
        text = capacity_report.write(found, files, console)
        if not in_place:
            _write_searches(out, found)
        comparisons[cid] = text.replace("](latency-", f"]({cid}/latency-")
        missing += len(found.record["missing"])
    return missing


def _compare_reports(compares: dict[str, dict[str, str]], measured: dict[str, Measured], out: Path,
                     console: Console, comparisons: dict[str, str]) -> None:
    """Each comparison's headline and table from the two records it names (measured here, or a saved file)."""
    from llama4spec.results import comparison as compare
    from llama4spec.runbook.noise_prior import of_sweep
    from llama4spec.runbook.steps.compare import headline

    for cid, refs in compares.items():
        pair = [measured[ref].record if ref in measured else (bench_record.read(Path(ref)) if "/" in ref else None)
                for ref in (refs.get("baseline", ""), refs.get("candidate", ""))]
        if pair[0] is None or pair[1] is None:
            absent = [role for role, rec in zip(("baseline", "candidate"), pair) if rec is None]
            comparisons[cid] = f"not compared: no counted record of the {' and the '.join(absent)}\n"
            continue
        prior = of_sweep(None, [measured[ref].config for ref in refs.values() if ref in measured])
        line = headline(*pair, prior)
        console.print(line, markup=False, highlight=False, soft_wrap=True)
        compare.render(console, *pair)
        table = f"{line}\n\n{compare.markdown(*pair)}"
        write_atomic(out / cid / "table.md", table)
        comparisons[cid] = table


def refuse_unrelated(sources: list[Source]) -> None:
    """Runs merged into one report must be runs of one runbook with the same settings: the same
    runbook and command-line overrides, one kind for each step id, one design for each sweep, and
    each capacity search in one run only (a search is continued by --resume, never by a merge).
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
    designs: dict[str, tuple[Any, Source]] = {}
    for s in sources:
        for step in s.plan:
            sid, kind = str(step["id"]), str(step["kind"])
            seen = kinds.setdefault(sid, (kind, s))
            if seen[0] != kind:
                raise UserError(f"step '{sid}' is a {plain(seen[0], 40)} step in {where(seen[1])} and a "
                                f"{plain(kind, 40)} step in {where(s)}; merge only runs of one runbook, or report "
                                f"each on its own")
            design = step.get("design", {}).get("design") if isinstance(step.get("design"), dict) else None
            if design is not None:
                known = designs.setdefault(sid, (design, s))
                if known[0] != design:
                    raise UserError(f"sweep '{sid}' measured its pairs {shown(known[0])} in {where(known[1])} and "
                                    f"{shown(design)} in {where(s)}: one report cannot pair the runs of both; report "
                                    f"each on its own")
    searched: dict[str, Source] = {}
    for s in sources:
        for step in s.plan:
            if step.get("kind") != "capacity":
                continue
            sid = str(step["id"])
            if sid in searched and searched[sid] is not s:
                raise UserError(f"capacity step '{sid}' searched in {where(searched[sid])} and in {where(s)}: a "
                                f"search goes on with --resume, never by a merge; report each run on its own")
            searched[sid] = s


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


def _colocation(sources: list[Source], measured: dict[str, Measured]) -> dict[str, tuple[str, ...]]:
    """Point id -> the groups that ran beside its group on its node (``runbook.colocation``), for
    the points measured in a launcher's groups."""
    from llama4spec.runbook import colocation

    out: dict[str, tuple[str, ...]] = {}
    for s in sources:
        out.update(colocation.beside_points(s.dir, {pid: m.where for pid, m in measured.items() if pid not in out}))
    return out


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
        write_json(files["points"], vllm_runs(m.config, m.record))
        write_atomic(out / pid / "config.yaml", yaml.safe_dump(m.config, sort_keys=False))
