"""The one executor: runbooks and one-step CLI commands alike.

Before anything starts it runs the doctor once per engine step, checks every port and host once, and builds
the tiny models if a step uses them. Servers live in one ExitStack (teardown registered the moment each
starts, so this is teardown's one owner); the run's status is rewritten after every step, so a later failure
loses nothing; at the end it carries the run's wall time against the dry run's (``runbook.pricing.run_cost``).

A failed step skips only what depends on it (``runbook.failures.blocked_by``): the rest of a sweep runs and
its report covers what was measured; the run ends "failed", exit 1 (``stop_on_error``: at the first failure).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Callable, Mapping

from omegaconf import OmegaConf
from rich.console import Console
from rich.markup import escape

from llama4spec.config.compose import Composed
from llama4spec.engine.secrets import redact
from llama4spec.errors import UserError
from llama4spec.results.bench import BenchRecord
from llama4spec.results.provenance import environment_record, host, model_revisions, plan_secrets, public_config, versions
from llama4spec.runbook.failures import blocked_by
from llama4spec.runbook.plan import Plan, PlannedStep
from llama4spec.runbook.output import CommandOutput, RunOutput
from llama4spec.runbook.progress import Progress
from llama4spec.runbook.recorder import NoRecords, Recorder
from llama4spec.runbook.pricing import run_cost
from llama4spec.runbook.rundir import not_run
from llama4spec.runbook.steps.failed import StepFailed
from llama4spec.serving.bench_runner import BenchRunner
from llama4spec.serving.process import is_healthy, log_tail, port_in_use, sigterm_unwinds, unbindable
from llama4spec.serving.server import ServerHandle

Gate = Callable[[Composed, str], None]


class Run:
    """One execution of a plan and its record."""

    def __init__(self, plan: Plan, console: Console, environ: Mapping[str, str] | None = None,
                 finished: Mapping[str, BenchRecord | None] | None = None, progress: Progress | None = None,
                 stop_on_error: bool = False, records: Recorder | None = None, output: RunOutput | None = None):
        self.plan, self.console, self.stop_on_error = plan, console, stop_on_error
        self.finished = dict(finished or {})  # resuming: step id -> its record (benches) or None
        self.environ = dict(os.environ if environ is None else environ)
        self.dir = plan.run_dir
        self.servers: dict[str, ServerHandle] = {}
        self.results: dict[str, BenchRecord] = {}
        self.comparisons: dict[str, str] = {}
        self.stack = contextlib.ExitStack()
        self.benches = BenchRunner()  # every benchmark run of this run, in one worker process
        self.summary: dict[str, Any] = {
            "runbook": plan.runbook.name,
            "runbook_path": str(plan.runbook.path),
            "description": plan.runbook.description,
            "run_dir": str(self.dir),
            "overrides": plan.overrides,
            "status": "running",
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "steps": [{"id": p.id, "kind": p.kind, "status": "pending"} for p in plan.steps],
            "comparisons": self.comparisons,
        }
        self.entries = {e["id"]: e for e in self.summary["steps"]}  # the same dicts: step id -> its entry
        self.kinds = {p.id: p.kind for p in plan.steps}
        if finished is not None:
            self.summary["resumed"] = True
        # every value to hide in what this run writes or prints (engine.secrets.redact)
        self.known_secrets = plan_secrets(plan, self.environ)
        self.records = Recorder(self.dir, self.known_secrets) if records is None else records  # where records go
        self.output = RunOutput() if output is None else output  # what the run says about itself
        # what is shown while steps run (-q: nothing, -v: the logs too); every line through self.redact
        self.progress = (progress or Progress(console)).attach(plan, self.redact, skip=list(self.finished))

    def redact(self, obj: Any) -> Any:
        """What this run records or prints, with every secret as ***."""
        return redact(obj, self.known_secrets)

    def say(self, text: str) -> None:
        self.console.print(self.redact(text), markup=False, highlight=False, soft_wrap=True)

    def secrets(self, p: PlannedStep) -> dict[str, str]:
        """The step's secret environment, read from the variables named in the plan."""
        return {name: self.environ[src] for name, src in p.secret_env.items() if self.environ.get(src)}

    # -- records (each through self.redact) --------------------------------------------------
    def environment_record(self) -> dict[str, str]:
        """environment.json: the allow-listed variables (vLLM, CUDA, NCCL, HF, torch, paths) and
        everything the run sets (runbook env, every step's env, its secret env by name), redacted."""
        sets: dict[str, str] = dict(self.plan.runbook.env)
        for p in self.plan.steps:
            sets.update(p.env)
        secret_names = [name for p in self.plan.steps for name, src in p.secret_env.items() if self.environ.get(src)]
        return environment_record(self.environ, sets, secret_names, self.known_secrets)

    def write_start(self) -> None:
        if not self.records.keeps:
            return
        self.records.start(self.plan, self.plan.source_text())
        self.records.json("environment.json", self.environment_record())
        self.host_record = {"versions": versions(), "host": host()}
        self.write_host()
        self.write_summary()

    def models(self) -> dict[str, Any]:
        """host.json's "models": per step that loads or fetches models, each model's repository, the
        revision asked for and the commit of its snapshot in the step's hub cache (no network)."""
        return {p.id: model_revisions(p.composed.cfg, {**self.environ, **p.env}) for p in self.plan.steps
                if p.step.traits.loads_models and p.composed is not None}

    def write_host(self) -> None:
        """host.json: versions, host, the models' resolved commits (again after each step that may fetch them)."""
        if self.records.keeps:
            self.records.json("host.json", {**self.host_record, "models": self.models()})

    def write_config(self, p: PlannedStep) -> None:
        if self.records.keeps and p.composed is not None and "config_file" in p.artifacts:
            config = public_config(p.composed.raw, self.known_secrets, self.environ)
            self.records.config(p.artifacts["config_file"], OmegaConf.to_yaml(config))

    def write_summary(self) -> None:
        self.records.status(self.summary, self.plan.runbook.description)

    def write_page(self) -> None:
        """report.html from the records just written; one that cannot be written is said, never fatal."""
        if not self.records.keeps:
            return
        from llama4spec.runbook import write_page as page

        try:
            page.write(self.dir, self.known_secrets)
        except (UserError, OSError) as err:
            self.say(f"note: report.html not written: {err}")

    def not_run(self) -> dict[str, str]:
        """Step id -> why it has no result ("failed: ...", "skipped: ..."), for reports."""
        return not_run(self.summary["steps"])

    def entry(self, step_id: str) -> dict[str, Any]:
        return self.entries[step_id]

    # -- what steps use of the run (spec.StepRun) --------------------------------------------
    def server(self, step_id: str | None) -> ServerHandle | None:
        """The running server of serve step ``step_id`` (None when it started in an earlier run)."""
        return self.servers.get(step_id) if step_id is not None else None

    def keep_server(self, step_id: str, server: ServerHandle) -> None:
        """A server that started: stopped at the end of the run at the latest."""
        self.stack.callback(server.stop)
        self.servers[step_id] = server

    def keep_result(self, step_id: str, record: BenchRecord) -> None:
        self.results[step_id] = record

    def keep_comparison(self, step_id: str, text: str) -> None:
        self.comparisons[step_id] = text

    def partial(self, step_id: str, result: dict[str, Any]) -> None:
        """What a step that is about to fail did get done (its status keeps it)."""
        self.entries[step_id]["result"] = result

    # -- the run -----------------------------------------------------------------------------
    def _step(self, n: int, p: PlannedStep) -> bool:
        """Run one step; False when it failed."""
        total, entry = len(self.plan.steps), self.entry(p.id)
        if self.output.numbered(total):
            self.progress.step(n, total, p)
        if p.id in self.finished:  # resuming: measured earlier by the same command
            record = self.finished[p.id]
            entry.update(status="done", resumed=True, result=record.figures() if record else {})
            if "config_file" in p.artifacts and not p.artifacts["config_file"].exists():
                self.write_config(p)  # what a report rebuilt from the records reads
            self.progress.note("      already measured in this run directory; skipped")
            return True
        entry["status"] = "running"
        started = time.monotonic()
        self.write_config(p)
        self.write_summary()  # even a SIGKILL leaves a record of which step was running
        try:
            entry["result"] = p.step.kind_of.execute(self, p)
        except UserError as err:  # bad input found while running (a prompts file, say): the step failed
            entry.update(status="failed", error="; ".join(err.problems), seconds=time.monotonic() - started)
            self.output.input_error(err)
            self.record_failure(p)
            return False
        except StepFailed as err:
            entry.update(status="failed", error=str(err), seconds=time.monotonic() - started)
            if err.tail:
                entry["log_tail"] = list(err.tail)
            for line in err.tail:
                self.say(f"  | {line}")
            self.record_failure(p)
            return False
        entry.update(status="done", seconds=time.monotonic() - started)
        if p.step.traits.loads_models:
            self.write_host()
        self.progress.step_done(p, entry["seconds"], show=self.output.numbered(total))
        self.write_summary()
        return True

    def record_failure(self, p: PlannedStep) -> None:
        """After step ``p`` failed: say so, record it; a bench whose server has exited marks that
        server (its remaining benchmarks are skipped) and stops what is left of it."""
        self.console.print(f"[bold red]error:[/bold red] step '{escape(p.id)}' failed: "
                           f"{escape(self.redact(self.entry(p.id)['error']))}", highlight=False, soft_wrap=True)
        self.progress.dropped(p)
        server = self.server(p.step.server) if p.step.traits.benchmarks else None
        if server is not None and not server_survived(server, p.url):
            self.entry(p.step.server)["exited"] = True
            server.stop()
        self.write_summary()

    def skip_reason(self, p: PlannedStep) -> str | None:
        """Why ``p`` must not run now (a failure it depends on, a missing input), or None."""
        if p.id in self.finished:
            return None
        why = blocked_by(p, self.entries, self.kinds)
        return why if why is not None else p.step.kind_of.missing_input(self.plan, p)

    def skip(self, n: int, p: PlannedStep, reason: str) -> None:
        self.entry(p.id).update(status="skipped", reason=reason)
        if self.output.numbered(len(self.plan.steps)):
            self.progress.step(n, len(self.plan.steps), p)
        self.progress.note(f"      skipped: {reason}")
        self.progress.dropped(p)
        self.write_summary()

    def hold(self) -> int:
        """Keep serving until Ctrl-C (or a server exits: then its log tail and exit 1)."""
        self.console.print("[green]serving[/green]; Ctrl-C stops it", highlight=False)
        while all(server.alive() for server in self.servers.values()):
            time.sleep(1)
        for server in self.servers.values():
            gone = server.exit_status()
            if gone:
                who, code, log = gone
                self.say(f"{who} exited with code {code}; log: {log}")
                for line in log_tail(log):
                    self.say(f"  | {line}")
        return 1

    def prestart_benchmarks(self) -> None:
        """Start the benchmark worker before the first step when a benchmark will run: its imports
        (about 10 s here) overlap the servers' start-up."""
        from llama4spec.serving.benchmark import bench_env

        for p in self.plan.steps:
            if p.step.traits.benchmarks and p.id not in self.finished and p.composed is not None:
                self.benches.prestart(bench_env(p.composed.cfg, self.environ))
                return

    def execute(self, then: Callable[["Run"], int] | None = None) -> int:
        """Every step, then ``then`` (the serve command's ``hold``) when none failed; the exit code."""
        self.write_start()
        self.output.opened(self)
        began = time.monotonic()
        failed: str | None = None  # the first step that failed
        try:
            with sigterm_unwinds(), self.stack:
                self.stack.enter_context(self.benches)
                self.prestart_benchmarks()
                for n, p in enumerate(self.plan.steps, 1):
                    if failed and self.stop_on_error:
                        break
                    why = self.skip_reason(p)
                    if why is not None:
                        self.skip(n, p, why)
                    elif not self._step(n, p):
                        failed = failed or p.id
                if then is not None and not failed and then(self) != 0:
                    failed = self.plan.steps[-1].id
                self.summary["status"] = "stopping servers"
        except UserError:
            failed = failed or "?"
            raise
        except BaseException:
            self.summary["status"] = "interrupted"
            for e in self.summary["steps"]:
                if e["status"] == "running":
                    e["status"] = "interrupted"
            raise
        finally:
            for e in self.summary["steps"]:
                if e["status"] == "pending":
                    e["status"] = "skipped"
                    if failed and self.stop_on_error:
                        e["reason"] = f"the run stopped at step '{failed}' (--stop-on-error)"
            if self.summary["status"] != "interrupted":
                self.summary["status"] = "failed" if failed else "done"
            self.summary["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            self.summary.update(run_cost(self.plan.pricing, self.summary, time.monotonic() - began))
            self.write_summary()
            self.write_page()
            self.output.closed(self)
        return 1 if failed else 0


def server_survived(server: ServerHandle, url: str, within_s: float = 5.0) -> bool:
    """After a benchmark failed: whether its server is still there. A benchmark can fail the moment
    its server dies, before the process watching the server has seen it go (it looks twice a
    second), so a server that does not answer ``/health`` gets ``within_s`` to be seen gone."""
    deadline = time.monotonic() + within_s
    while server.alive():
        if is_healthy(url, timeout_s=1.0):
            return True
        if time.monotonic() > deadline:
            return True  # running but not answering: its next benchmark finds out
        time.sleep(0.2)
    return False


def _tag(plan: Plan, p: PlannedStep, line: str) -> str:
    """A problem of a step; a one-step CLI plan's problems are the command's own."""
    return line if p.flat else f"step '{p.id}': {line}"


def ports_free(plan: Plan, skip: Mapping[str, Any] = {}) -> None:
    """Every serve step's port must be free before anything starts."""
    taken = []
    for p in plan.steps:
        if p.step.traits.serves and p.composed and p.id not in skip:
            s = p.composed.cfg.serve
            why = unbindable(s.host)
            if why:
                taken.append(_tag(plan, p, f"serve.host {s.host}: a server cannot listen there on this machine "
                                              f"({why}); give an address of this machine, 127.0.0.1 or 0.0.0.0"))
            elif port_in_use(s.host, s.port):
                taken.append(_tag(plan, p, f"port {s.port} on {s.host} is already in use; stop what listens "
                                              f"there or give {'it' if p.flat else 'the step'} another serve.port"))
    if taken:
        raise UserError(*taken)


def preflight(plan: Plan, gate: Gate | None, skip: Mapping[str, Any]) -> None:
    """The checks before anything starts, once each: the doctor for every engine step, ports,
    hosts, the tiny models."""
    refused: list[str] = []
    for p in plan.steps:
        if p.id in skip or gate is None or p.composed is None or not p.step.traits.starts_engine:
            continue
        try:
            gate(p.composed, p.id)
        except UserError as err:
            refused += [_tag(plan, p, line) for line in err.problems]
    if refused:
        raise UserError(*refused)
    ports_free(plan, skip)

    for p in plan.steps:  # what must hold before anything starts (a bench's running server answers)
        why = None if p.id in skip else p.step.kind_of.ready_problem(p)
        if why:
            raise UserError(why)
    if any(p.nodes for p in plan.steps):  # hosts reachable, master ports free: before anything starts
        from llama4spec.multinode.checks import host_problems

        found = [_tag(plan, p, x) for p in plan.steps if p.nodes for x in host_problems(p.composed.cfg, p.nodes)]
        if found:
            raise UserError(*found)
    from llama4spec.tiny.build import ensure_for

    for p in plan.steps:
        if p.composed and p.id not in skip:
            ensure_for(p.composed.cfg)


def run(plan: Plan, console: Console, gate: Gate | None = None, environ: Mapping[str, str] | None = None,
        resume: bool = False, progress: Progress | None = None, stop_on_error: bool = False) -> int:
    """Check, then execute ``plan``; returns the exit code (0 done, 1 a step failed).

    ``resume``: ``plan.run_dir`` holds an earlier run of the same runbook; benchmarks it already
    measured with the same command are skipped, and so are servers with nothing left to measure
    (what failed or was skipped runs again). ``stop_on_error``: stop at the first failed step
    instead of running everything that does not depend on it.
    """
    finished, notes = None, []
    if resume:
        from llama4spec.runbook.resume import finished_steps

        finished = finished_steps(plan, notes)
    preflight(plan, gate, finished or {})
    run_ = Run(plan, console, environ, finished, progress, stop_on_error)
    from llama4spec.runbook.schedulers import findings

    for f in findings(plan):  # across steps: said once, before anything starts
        run_.say(f"doctor: {f.severity} {f.rule}: {f.line()}")
    for line in notes:  # a record cut short or foreign: said once, its step measured again
        run_.say(f"note: {line}")
    return run_.execute()


def run_command(plan: Plan, console: Console, gate: Gate | None = None, hold: bool = False) -> int:
    """A one-step command's plan (``serve``, ``bench``, ``offline``, ``fetch``): checked, then run with
    no run-directory records, its results printed; ``hold``: keep serving until Ctrl-C."""
    preflight(plan, gate, {})
    return Run(plan, console, records=NoRecords(), output=CommandOutput()).execute(then=Run.hold if hold else None)
