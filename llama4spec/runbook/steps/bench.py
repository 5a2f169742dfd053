"""A ``bench`` step: vLLM's serving benchmark against a serve step's server (or a given url)."""

from __future__ import annotations

from typing import Any

from llama4spec.engine.bench import bench_flags, display_argv, exec_argv
from llama4spec.engine.args import base_url
from llama4spec.runbook.rundir import bench_files, vllm_runs
from llama4spec.runbook.steps.failed import StepFailed


# Flags the tool sets itself for every benchmark: repeating them in extra_args would contradict it.
OWN_FLAGS = ("--base-url", "--host", "--port", "--model", "--backend", "--endpoint", "--label", "--save-result",
             "--result-dir", "--result-filename")


def plan(ctx, p) -> None:
    s = p.step
    own = [a.split("=", 1)[0] for a in s.extra_args if a.split("=", 1)[0] in OWN_FLAGS]
    if own:
        ctx.report(s.id, [f"extra_args repeats {', '.join(dict.fromkeys(own))}, which llama4spec sets itself "
                          f"(the server's url, the model, where results go); drop it from extra_args"])
    if s.server is None and s.url is None:
        ctx.report(s.id, ["a bench step needs 'server' (a serve step's id) or 'url'"])
        return
    if s.server is not None:
        server = ctx.planned.get(s.server)
        if server is None or server.composed is None:
            return  # the server's own problems are reported once, at the serve step
        p.composed = ctx.compose([*server.step.overrides, *s.overrides], s.id)
    else:
        p.composed = ctx.compose(list(s.overrides), s.id)
    if p.composed is None:
        return
    cfg = p.composed.cfg
    p.url = (ctx.planned[s.server].url if s.server else s.url.rstrip("/")) or base_url(cfg.serve.host, cfg.serve.port)
    files = bench_files(p.dir)
    flags = bench_flags(cfg, p.url, files["result"].parent, files["result"].name, s.label or s.id, s.extra_args)
    p.argv, p.exec_argv = display_argv(flags), exec_argv(flags)
    p.env = dict(ctx.runbook.env)
    p.secret_env = {"OPENAI_API_KEY": cfg.serve.api_key_env} if cfg.serve.api_key_env else {}
    p.artifacts = {**files, "config_file": p.dir / "config.yaml"}


def execute(run, p) -> dict[str, Any]:
    from llama4spec.results.provenance import write_json
    from llama4spec.serving.bench import BenchFiles, failure, run_bench
    from llama4spec.serving.process import log_tail

    if p.step.server is not None:
        server = run.servers[p.step.server]
        if not server.alive():
            raise StepFailed(f"server '{p.step.server}' is no longer running; its log: {server.log_path}",
                             log_tail(server.log_path))
    files = BenchFiles(p.artifacts["result"], p.artifacts["record"], p.artifacts["log"])
    with run.progress.activity(f"{p.id}: benchmark") as live:  # requests finished, from /metrics
        record = run_bench(p.composed.cfg, p.url, files, label=p.step.label or p.id,
                           extra_args=p.step.extra_args, environ=run.environ,
                           repeats=p.step.repeats, warmup=p.step.warmup,
                           on_progress=live.count, on_line=live.line if run.progress.verbose else None,
                           runner=run.benches)
    if not record.counted:
        raise StepFailed(failure(record, files.log), log_tail(files.log, 15))
    from llama4spec.engine.bench import oversampling_warning

    warning = oversampling_warning(p.composed.cfg)
    if warning:
        run.say(f"      warning: {warning}")
    from llama4spec.runbook.steps.sweep import config_data

    write_json(p.artifacts["points"], vllm_runs(config_data(p), record))
    run.results[p.id] = record
    if not run.plan.record:  # the bench command: its table and files
        from llama4spec.results.compare import render_single

        render_single(run.console, record)
        run.say(f"record: {files.record}  vLLM result: {files.result}")
    return record.figures()


def describe(p, say) -> None:
    s = p.step
    warm = f"after an unrecorded warm-up of {s.warmup} requests" if s.warmup else "no warm-up"
    say(f"    runs: {s.repeats} counted ({warm})")
