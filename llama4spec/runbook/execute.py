"""Executing a plan: servers in an ExitStack (teardown registered the moment each starts),
progress step by step, and a run record updated after every step.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Callable, Mapping

from omegaconf import OmegaConf
from rich.console import Console

from llama4spec import compare
from llama4spec.config.compose import Composed
from llama4spec.errors import UserError
from llama4spec.runbook.plan import Plan, PlannedStep
from llama4spec.runbook.record import host, public_config, redact_env, versions, write_json
from llama4spec.server import Server, ServerError, log_tail, port_in_use, sigterm_unwinds

Gate = Callable[[Composed, str], None]


class StepFailed(Exception):
    def __init__(self, message: str, tail: list[str] | None = None):
        super().__init__(message)
        self.tail = tail or []


def _secrets(step: PlannedStep, environ: Mapping[str, str]) -> dict[str, str]:
    return {name: environ[src] for name, src in step.secret_env.items() if environ.get(src)}


@contextlib.contextmanager
def _environment(env: Mapping[str, str]):
    """Set ``env`` in this process for the duration of an in-process step, then restore it."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _figures(record: dict[str, Any]) -> dict[str, Any]:
    result = record.get("result") or {}
    acc = record.get("acceptance") or {}
    keys = ("request_throughput", "output_throughput", "total_token_throughput", "mean_ttft_ms",
            "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
            "mean_itl_ms", "median_itl_ms", "p99_itl_ms", "completed", "failed")
    figures = {k: result.get(k) for k in keys if k in result}
    figures["mean_acceptance_length"] = acc.get("mean_acceptance_length")
    figures["acceptance_rate_per_position"] = acc.get("acceptance_rate_per_position")
    return figures


class Run:
    """One execution of a plan and its record."""

    def __init__(self, plan: Plan, console: Console, environ: Mapping[str, str] | None = None,
                 finished: Mapping[str, dict[str, Any] | None] | None = None):
        self.plan, self.console = plan, console
        self.finished = dict(finished or {})  # resuming: step id -> its record (benches) or None
        self.environ = dict(os.environ if environ is None else environ)
        self.dir = plan.run_dir
        self.servers: dict[str, Server] = {}
        self.summary: dict[str, Any] = {
            "runbook": plan.runbook.name,
            "runbook_path": str(plan.runbook.path),
            "run_dir": str(self.dir),
            "overrides": plan.overrides,
            "status": "running",
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "steps": [{"id": p.id, "kind": p.kind, "status": "pending"} for p in plan.steps],
            "comparisons": {},
        }
        if finished is not None:
            self.summary["resumed"] = True

    # -- records -----------------------------------------------------------------------------
    def _secret_values(self) -> tuple[str, ...]:
        names = {src for p in self.plan.steps for src in p.secret_env.values()}
        return tuple(self.environ[n] for n in names if self.environ.get(n))

    def write_start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "runbook.yaml").write_text(self.plan.runbook.path.read_text())
        write_json(self.dir / "plan.json", self.plan.to_record())
        env = {**self.environ, **self.plan.runbook.env}
        write_json(self.dir / "environment.json", redact_env(env, self._secret_values()))
        write_json(self.dir / "host.json", {"versions": versions(), "host": host()})
        for p in self.plan.steps:
            if p.composed is not None and "config_file" in p.artifacts:
                p.artifacts["config_file"].write_text(OmegaConf.to_yaml(public_config(p.composed.raw)))
        self.write_summary()

    def write_summary(self) -> None:
        write_json(self.dir / "summary.json", self.summary)
        (self.dir / "summary.md").write_text(self.markdown())

    def markdown(self) -> str:
        s = self.summary
        lines = [f"# {s['runbook']}", "", self.plan.runbook.description, "",
                 f"status: **{s['status']}**, started {s['started']}", "",
                 "| step | kind | status | seconds |", "|---|---|---|---:|"]
        for st in s["steps"]:
            secs = st.get("seconds")
            status = st["status"] + (" (earlier run)" if st.get("resumed") else "")
            lines.append(f"| {st['id']} | {st['kind']} | {status} | {'' if secs is None else f'{secs:.1f}'} |")
        for st in s["steps"]:
            if st.get("error"):
                lines += ["", f"{st['id']} failed: {st['error']}"]
        for step_id, table in s["comparisons"].items():
            lines += ["", f"## {step_id}", "", table]
        return "\n".join(lines) + "\n"

    def _entry(self, step_id: str) -> dict[str, Any]:
        return next(e for e in self.summary["steps"] if e["id"] == step_id)

    # -- steps -------------------------------------------------------------------------------
    def serve(self, p: PlannedStep, stack: contextlib.ExitStack) -> dict[str, Any]:
        cfg = p.composed.cfg
        if p.nodes:  # every node started, watched and stopped together; a log per node
            from llama4spec.multinode.serve import start_nodes, step_logs

            server = start_nodes(cfg, p.nodes, step_logs(p), _secrets(p, self.environ), name=f"server '{p.id}'")
        else:
            server = Server(p.exec_argv, host=cfg.serve.host, port=cfg.serve.port, log_path=p.artifacts["log"],
                            env={**p.env, **_secrets(p, self.environ)}, health_timeout_s=cfg.serve.health_timeout_s,
                            name=f"server '{p.id}'")
        try:
            server.start()
        except ServerError as err:
            self._entry(p.id)["result"] = {"pid": server.proc.pid if server.proc else None}
            raise StepFailed(str(err), err.log_tail) from None
        stack.callback(server.stop)
        self.servers[p.id] = server
        return {"url": server.url, "ready_after_s": server.ready_after_s, "pid": server.proc.pid}

    def stop(self, p: PlannedStep) -> dict[str, Any]:
        self.servers[p.step.server].stop()
        return {}

    def bench(self, p: PlannedStep) -> dict[str, Any]:
        from llama4spec.bench import run_bench

        server = self.servers[p.step.server]
        if not server.alive():
            raise StepFailed(f"server '{p.step.server}' is no longer running; its log: {server.log_path}",
                             log_tail(server.log_path))
        out = run_bench(p.composed.cfg, p.url, self.dir, p.id, label=p.step.label or p.id,
                        extra_args=p.step.extra_args, environ=self.environ)
        if not out.ok:
            raise StepFailed(out.failure, log_tail(out.log_path, 15))
        return _figures(out.record)

    def offline(self, p: PlannedStep) -> dict[str, Any]:
        from llama4spec.offline import run_offline

        with _environment(p.env):  # the step's planned environment (runbook env + engine env), as shown
            code = run_offline(p.composed, json_path=p.artifacts["record"], console=self.console)
        if code != 0:
            raise StepFailed(f"offline run exited with code {code}")
        return {}

    def compare(self, p: PlannedStep) -> dict[str, Any]:
        try:
            base, cand = compare.load(p.inputs["baseline"]), compare.load(p.inputs["candidate"])
        except UserError as err:
            raise StepFailed("; ".join(err.problems)) from None
        compare.render(self.console, base, cand)
        table = compare.markdown(base, cand)
        p.artifacts["table"].write_text(table)
        self.summary["comparisons"][p.id] = table
        return {label: {"baseline": a, "candidate": b, "speedup": s} for label, a, b, s in compare.rows(base, cand)}

    def sweep(self, p: PlannedStep) -> dict[str, Any]:
        from llama4spec.sweep.step import run_report

        text, record = run_report(self.plan, p, self.console)
        self.summary["comparisons"][p.id] = text
        return record

    # -- the run -----------------------------------------------------------------------------
    def execute(self) -> int:
        total = len(self.plan.steps)
        self.write_start()
        self.console.print(f"run record: [bold]{self.dir}[/bold]")
        failed = False
        try:
            with sigterm_unwinds(), contextlib.ExitStack() as stack:
                for n, p in enumerate(self.plan.steps, 1):
                    entry = self._entry(p.id)
                    self.console.print(f"[bold][{n}/{total}] {p.id}[/bold]: {p.kind}", highlight=False)
                    if p.id in self.finished:  # resuming: measured earlier by the same command
                        record = self.finished[p.id]
                        entry.update(status="done", resumed=True, result=_figures(record) if record else {})
                        self.console.print("      already measured in this run directory; skipped", highlight=False)
                        continue
                    entry["status"] = "running"
                    started = time.monotonic()
                    try:
                        if p.kind == "serve":
                            entry["result"] = self.serve(p, stack)
                        else:
                            entry["result"] = getattr(self, p.kind)(p)
                    except StepFailed as err:
                        entry.update(status="failed", error=str(err), seconds=time.monotonic() - started)
                        for line in err.tail:
                            self.console.print(f"  | {line}", markup=False, highlight=False, soft_wrap=True)
                        self.console.print(f"[bold red]error:[/bold red] step '{p.id}' failed: {err}",
                                           highlight=False, soft_wrap=True)
                        failed = True
                        break
                    entry.update(status="done", seconds=time.monotonic() - started)
                    self.console.print(f"      done in {entry['seconds']:.1f} s", highlight=False)
                    self.write_summary()
                self.summary["status"] = "stopping servers"
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
            if self.summary["status"] != "interrupted":
                self.summary["status"] = "failed" if failed else "done"
            self.summary["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            self.write_summary()
            self.console.print(f"summary: [bold]{self.dir / 'summary.md'}[/bold]")
        return 1 if failed else 0


def ports_free(plan: Plan, skip: Mapping[str, Any] = {}) -> None:
    """Every serve step's port must be free before anything starts."""
    taken = []
    for p in plan.steps:
        if p.kind == "serve" and p.composed and p.id not in skip:
            s = p.composed.cfg.serve
            if port_in_use(s.host, s.port):
                taken.append(f"step '{p.id}': port {s.port} on {s.host} is already in use; stop what listens "
                             f"there or give the step another serve.port")
    if taken:
        raise UserError(*taken)


def run(plan: Plan, console: Console, gate: Gate | None = None, environ: Mapping[str, str] | None = None,
        resume: bool = False) -> int:
    """Check, then execute ``plan``; returns the exit code (0 done, 1 a step failed).

    ``resume``: ``plan.run_dir`` holds an earlier run of the same runbook; benchmarks it already
    measured with the same command are skipped, and so are servers with nothing left to measure.
    """
    finished = None
    if resume:
        from llama4spec.sweep.step import finished_steps

        finished = finished_steps(plan)
    refused: list[str] = []
    for p in plan.steps:
        if finished and p.id in finished:
            continue
        if gate is not None and p.composed is not None and p.kind in ("serve", "offline"):
            try:
                gate(p.composed, p.id)
            except UserError as err:
                refused += [f"step '{p.id}': {line}" for line in err.problems]
    if refused:
        raise UserError(*refused)
    ports_free(plan, finished or {})
    if any(p.nodes for p in plan.steps):  # hosts reachable, master ports free: before anything starts
        from llama4spec.multinode.checks import host_problems

        found = [f"step '{p.id}': {x}" for p in plan.steps if p.nodes for x in host_problems(p.composed.cfg, p.nodes)]
        if found:
            raise UserError(*found)
    from llama4spec.tiny.build import ensure_for

    for p in plan.steps:
        if p.composed:
            ensure_for(p.composed.cfg)
    return Run(plan, console, environ, finished).execute()
