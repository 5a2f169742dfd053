"""A ``bench`` step: vLLM's serving benchmark against a serve step's server (or a given url)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama4spec.engine.args import base_url
from llama4spec.engine.bench import bench_flags, display_argv, exec_argv
from llama4spec.runbook import fields
from llama4spec.runbook.measured import config_data
from llama4spec.runbook.rundir import bench_files, vllm_runs
from llama4spec.runbook.steps.failed import StepFailed
from llama4spec.runbook.spec import Traits
from llama4spec.runbook.steps.base import BaseKind, server_ref


@dataclass
class Keys:
    server: str | None = fields.text(fields.MAX_ID)  # the id of a serve step
    url: str | None = fields.text()  # a server that runs already (instead of a serve step)
    overrides: list[str] = fields.overrides()
    label: str | None = fields.label()  # the name in tables (default: the step id)
    extra_args: list[str] = fields.texts()  # more `vllm bench serve` flags
    repeats: int = fields.count(1, 1, fields.MAX_REPEATS)  # counted runs against the same server
    warmup: int = fields.count(0, 0, fields.MAX_WARMUP)  # warm-up requests in an unrecorded run first


# Flags the tool sets itself for every benchmark: repeating them in extra_args would contradict it.
OWN_FLAGS = ("--base-url", "--host", "--port", "--model", "--backend", "--endpoint", "--label", "--save-result",
             "--result-dir", "--result-filename")


def check(keys: Keys, at: str, problems: list[str], state: dict[str, Any]) -> None:
    problems.extend(fields.warmup_flag_problems(keys.extra_args, at))


def plan(ctx, p) -> None:
    s = p.step.keys
    own = [a.split("=", 1)[0] for a in s.extra_args if a.split("=", 1)[0] in OWN_FLAGS]
    if own:
        ctx.report(p.id, [f"extra_args repeats {', '.join(dict.fromkeys(own))}, which llama4spec sets itself "
                          f"(the server's url, the model, where results go); drop it from extra_args"])
    if s.server is None and s.url is None:
        ctx.report(p.id, ["a bench step needs 'server' (a serve step's id) or 'url'"])
        return
    if s.server is not None:
        server = ctx.planned.get(s.server)
        if server is None or server.composed is None:
            return  # the server's own problems are reported once, at the serve step
        p.composed = ctx.compose([*server.step.keys.overrides, *s.overrides], p.id)
    else:
        p.composed = ctx.compose(list(s.overrides), p.id)
    if p.composed is None:
        return
    cfg = p.composed.cfg
    p.url = (ctx.planned[s.server].url if s.server else s.url.rstrip("/")) or base_url(cfg.serve.host, cfg.serve.port)
    files = bench_files(p.dir)
    flags = bench_flags(cfg, p.url, files["result"].parent, files["result"].name, s.label or p.id, s.extra_args)
    p.argv, p.exec_argv = display_argv(flags), exec_argv(flags)
    p.env = dict(ctx.runbook.env)
    p.secret_env = {"OPENAI_API_KEY": cfg.serve.api_key_env} if cfg.serve.api_key_env else {}
    p.artifacts = {**files, "config_file": p.dir / "config.yaml"}


def execute(run, p) -> dict[str, Any]:
    from llama4spec.results.provenance import write_json
    from llama4spec.serving.bench import BenchFiles, failure, run_bench
    from llama4spec.serving.process import log_tail

    keys = p.step.keys
    if keys.server is not None:
        server = run.server(keys.server)
        if not server.alive():
            raise StepFailed(f"server '{keys.server}' is no longer running; its log: {server.log_path}",
                             log_tail(server.log_path))
    files = BenchFiles(p.artifacts["result"], p.artifacts["record"], p.artifacts["log"])
    with run.progress.activity(f"{p.id}: benchmark") as live:  # requests finished, from /metrics
        record = run_bench(p.composed.cfg, p.url, files, label=keys.label or p.id,
                           extra_args=keys.extra_args, environ=run.environ,
                           repeats=keys.repeats, warmup=keys.warmup,
                           on_progress=live.count, on_line=live.line if run.progress.verbose else None,
                           runner=run.benches)
    if not record.counted:
        raise StepFailed(failure(record, files.log), log_tail(files.log, 15))
    from llama4spec.engine.bench import oversampling_warning

    warning = oversampling_warning(p.composed.cfg)
    if warning:
        run.say(f"      warning: {warning}")
    write_json(p.artifacts["points"], vllm_runs(config_data(p), record))
    run.keep_result(p.id, record)
    run.output.bench(run, record, files)  # the bench command prints its table and files
    return record.figures()


def describe(p, say) -> None:
    s = p.step.keys
    warm = f"after an unrecorded warm-up of {s.warmup} requests" if s.warmup else "no warm-up"
    say(f"    runs: {s.repeats} counted ({warm})")


def ready_problem(p) -> str | None:
    """A bench against a server that runs already: it must answer before anything starts."""
    from llama4spec.serving.process import is_healthy

    if p.step.keys.url and p.url and not is_healthy(p.url):
        return f"no server answers at {p.url}/health; start one with `llama4spec serve` or fix --url"
    return None


KIND = BaseKind("bench", Keys, Traits(uses_server=True, benchmarks=True, measures=True, shows_env=True),
                plan, execute, describe, check=check, references=server_ref, ready_problem=ready_problem)
