"""Running vLLM's own serving benchmark against a server and recording what it measured.

The benchmark runs in a worker process of its own (``serving.bench_runner``: vLLM's imports paid
once a run of the tool; a failure or an interruption never takes this process or its servers with
it) and writes vLLM's result JSON; acceptance figures come from the
server's ``/metrics`` before/after deltas. One point is an optional warm-up run (unrecorded: its
requests never land in a counted delta), then ``repeats`` counted runs against the same server,
each with its own result file and counter deltas; the outcome is one ``BenchRecord``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from llama4spec.config.schema import Config
from llama4spec.serving.band_prompts import write_band
from llama4spec.engine.bench_flags import bench_flags, category_prompt_count, display_argv, num_prompts
from llama4spec.engine.secrets import api_key_env
from llama4spec.files import Expect, Unreadable, json_or_none, read_text, write_atomic
from llama4spec.results import requests as per_request
from llama4spec.results import prefix_cache
from llama4spec.results.acceptance import AcceptanceCounters, from_prometheus_text
from llama4spec.results.bench import BenchRecord
from llama4spec.results.provenance import model_fingerprints
from llama4spec.serving.bench_runner import BenchRunner
from llama4spec.serving.vllm_bench import requests_path
from llama4spec.serving.watch import LogFollower, extra_requests, finished_requests, requests_done

# Live progress: (measured requests finished so far or None when /metrics cannot tell, total).
OnProgress = Callable[[int | None, int], None]


@dataclass
class BenchFiles:
    """Where one benchmark point writes: vLLM's result (run=0.json; repeats beside it as run=1.json,
    ...), the record, the log (every run appended)."""

    result: Path
    record: Path
    log: Path

    def run_result(self, i: int) -> Path:
        return self.result if i == 0 else self.result.with_name(f"run={i}.json")

    @property
    def warmup_result(self) -> Path:
        return self.result.with_name("warmup.json")


def bench_env(cfg: Config, environ: Mapping[str, str]) -> dict[str, str]:
    """The benchmark's extra environment: the config's env and the API key (by name), if any."""
    return {**cfg.env, **api_key_env(cfg.serve.api_key_env, "OPENAI_API_KEY", environ)}


def _metrics(url: str, api_key: str | None, read, timeout_s: float):
    """``read`` applied to the server's ``/metrics`` page; None when the page cannot be read."""
    import requests

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = requests.get(f"{url.rstrip('/')}/metrics", timeout=timeout_s, headers=headers)
        resp.raise_for_status()
        return read(resp.text)
    except (requests.RequestException, ValueError):
        return None


Counters = tuple[AcceptanceCounters, prefix_cache.PrefixCache]


def scrape(url: str, api_key: str | None = None) -> Counters | None:
    """Spec-decode and prefix-cache counters from one read of ``URL/metrics``; None when the page
    cannot be read."""
    return _metrics(url, api_key, lambda text: (from_prometheus_text(text), prefix_cache.from_prometheus_text(text)), 10)


def finished_count(url: str, api_key: str | None = None) -> float | None:
    """Requests the server has finished so far (``vllm:request_success_total``); None when unknown."""
    return _metrics(url, api_key, finished_requests, 2)


def progress_tick(url: str, api_key: str | None, flags: list[str], total: int, log: Path,
                  on_progress: OnProgress | None, on_line: Callable[[str], None] | None) -> Callable[[], None]:
    """What runs every second while the benchmark runs: new log lines to ``on_line``, and the
    measured requests finished (the server's counter, as a delta from before) to ``on_progress``."""
    before = finished_count(url, api_key) if on_progress else None
    extra = extra_requests(flags)
    follower = LogFollower(log, from_end=True)

    def tick() -> None:
        if on_line:
            for line in follower.read():
                on_line(line)
        if on_progress:
            on_progress(requests_done(before, finished_count(url, api_key), extra, total), total)

    return tick


def failure(record: BenchRecord, log: Path) -> str:
    """Why a benchmark does not count, in one line."""
    if record.returncode != 0:
        return f"the benchmark exited with code {record.returncode}; its log: {log}"
    failed = (record.result or {}).get("failed", "?")
    return f"the benchmark completed no request ({failed} failed); its log: {log}"


PROMPTS = Expect("prompt file", "check the benchmark's --dataset-path", max_bytes=256 << 20)
REQUESTS_CSV = "requests.csv"


def _flag(flags: list[str], name: str) -> str | None:
    return next((flags[i + 1] for i in range(len(flags) - 1) if flags[i] == name), None)


def prompt_categories(flags: list[str]) -> dict[str, str]:
    """SHA-256 of each prompt -> its category, for a benchmark of a JSONL file (vLLM's ``custom``
    dataset, sent as written: ``--skip-chat-template``) whose lines carry a ``category``; empty
    otherwise (or when the file cannot be read)."""
    path = _flag(flags, "--dataset-path")
    if _flag(flags, "--dataset-name") != "custom" or path is None or "--skip-chat-template" not in flags:
        return {}
    try:
        lines = read_text(Path(path), PROMPTS).splitlines()
    except Unreadable:
        return {}
    out: dict[str, str] = {}
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and isinstance(item.get("prompt"), str) and isinstance(item.get("category"), str):
            out[hashlib.sha256(item["prompt"].encode()).hexdigest()] = item["category"]
    return out


def read_requests(category: str | None, flags: list[str], result: Path) -> list[per_request.RequestRow]:
    """The run's requests as the worker wrote them beside ``result``, each with its category (the
    point's ``category``, else its prompt's in the prompt file)."""
    data, _ = json_or_none(requests_path(result))
    rows = per_request.rows_of(data, prompt_categories(flags), category)
    return rows or []


def write_requests_csv(record: BenchRecord, directory: Path) -> None:
    """``requests.csv`` of a point: every request of its counted runs (nothing without any)."""
    runs = record.counted_requests()
    if runs:
        write_atomic(directory / REQUESTS_CSV, per_request.to_csv(runs))


def _one_run(cfg: Config, url: str, result: Path, log: Path, *, label: str, extra_args: list[str] | tuple[str, ...],
             env: dict[str, str], prompts: int | None, on_progress: OnProgress | None,
             on_line: Callable[[str], None] | None, runner: BenchRunner) -> BenchRecord:
    """One ``vllm bench serve`` run: its result and its acceptance deltas (not written); a prompt
    file's input-length band (``bench.input_band``) is written beside its result first."""
    write_band(cfg, result.parent)
    flags = bench_flags(cfg, url, result.parent, result.name, label, extra_args, prompts=prompts)
    return _measured(cfg, url, flags, result, log, label=label, env=env, total=prompts or num_prompts(cfg),
                     on_progress=on_progress, on_line=on_line, runner=runner)


def _measured(cfg: Config, url: str, flags: list[str], result: Path, log: Path, *, label: str, env: dict[str, str],
              total: int, on_progress: OnProgress | None, on_line: Callable[[str], None] | None,
              runner: BenchRunner) -> BenchRecord:
    """``vllm bench serve FLAGS`` run once: its result, acceptance deltas and the load generator's
    CPU time (not written)."""
    before = scrape(url, env.get("OPENAI_API_KEY"))
    tick = None
    if on_progress or on_line:
        tick = progress_tick(url, env.get("OPENAI_API_KEY"), flags, total, log, on_progress, on_line)
    started, at = time.monotonic(), time.time()
    code = runner.run(flags, env, log, tick=tick)
    if tick is not None:
        tick()  # the last lines and the final count
    wall = time.monotonic() - started
    after = scrape(url, env.get("OPENAI_API_KEY"))
    delta, cached = (after[0] - before[0], after[1] - before[1]) if before is not None and after is not None else (None, None)
    k = cfg.lookahead if cfg.draft.method else None
    data = None
    if code == 0 and result.is_file():
        data, _ = json_or_none(result)
    return BenchRecord(label=label, url=url, argv=display_argv(flags), returncode=code, wall_time_s=wall,
                       lookahead=k, acceptance=delta if delta is not None and delta.num_drafts else None,
                       result=data if isinstance(data, dict) else None, started=at, client_cpu_s=runner.last_cpu_s,
                       prefix_cache=cached,
                       requests=read_requests(cfg.bench.category, flags, result) if code == 0 else [])


def _mark(log: Path, text: str) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"==> llama4spec: {text}\n")


def run_bench(cfg: Config, url: str, files: BenchFiles, *, label: str,
              extra_args: list[str] | tuple[str, ...] = (), environ: Mapping[str, str] | None = None,
              repeats: int = 1, warmup: int = 0, on_progress: OnProgress | None = None,
              on_line: Callable[[str], None] | None = None, runner: BenchRunner) -> BenchRecord:
    """Measure one point against ``url``: ``warmup`` requests in an unrecorded run, then ``repeats``
    counted runs (stopping at the first that does not count); write vLLM's results and the record;
    return the record. While a run goes, ``on_progress`` hears the measured requests finished and
    ``on_line`` every new line of its log (both polled about once a second). The runs go to
    ``runner``, the run's benchmark worker."""
    environ = os.environ if environ is None else environ
    files.result.parent.mkdir(parents=True, exist_ok=True)
    env = bench_env(cfg, environ)
    started = time.monotonic()
    k = cfg.lookahead if cfg.draft.method else None
    common = dict(label=label, extra_args=extra_args, env=env, on_progress=on_progress, on_line=on_line, runner=runner)
    runs: list[BenchRecord] = []
    if warmup:
        _mark(files.log, f"warm-up: {warmup} requests, not recorded")
        warm = _one_run(cfg, url, files.warmup_result, files.log, prompts=warmup, **common)
        if not warm.counted:
            record = BenchRecord(label=label, url=url, argv=warm.argv, returncode=warm.returncode or 1,
                                 wall_time_s=time.monotonic() - started, lookahead=k, warmup=warmup,
                                 result=warm.result)
            record.write(files.record)
            return record
    for i in range(repeats):
        if repeats > 1:
            _mark(files.log, f"run {i + 1} of {repeats}")
        run = _one_run(cfg, url, files.run_result(i), files.log, prompts=None, **common)
        runs.append(run)
        if not run.counted:
            break
    if repeats == 1 and len(runs) == 1:
        record = runs[0]
        record.warmup = warmup
    else:
        record = BenchRecord.of_runs(label, runs, url=url, lookahead=k, warmup=warmup,
                                     wall_time_s=time.monotonic() - started)
    record.models = model_fingerprints(cfg)  # which model files, wherever they lie (report merges points)
    record.category_prompts = category_prompt_count(cfg)
    record.write(files.record)
    write_requests_csv(record, files.record.parent)
    return record


def run_more(cfg: Config, url: str, files: BenchFiles, record: BenchRecord | None, *, label: str,
             extra_args: list[str] | tuple[str, ...] = (), environ: Mapping[str, str] | None = None,
             on_progress: OnProgress | None = None, on_line: Callable[[str], None] | None = None,
             runner: BenchRunner, start: int = 1, warmup: int = 0, pair: str | None = None) -> BenchRecord:
    """One more counted run of a point (``record``: its runs so far, None before its first): a
    sequential sweep's next run, against the same server or, ``start`` > 1, another start of its
    setting (a revisit), or a run of an interleaved pair (``pair``: the point it pairs with, kept on
    the run). ``warmup`` requests in an unrecorded run first. Its result beside the others (the
    first free run=N.json), the record rewritten with it. A warm-up that fails is the run returned
    (not counted)."""
    environ = os.environ if environ is None else environ
    if record is None:
        files.result.parent.mkdir(parents=True, exist_ok=True)
        k = cfg.lookahead if cfg.draft.method else None
        record = BenchRecord(label=label, url=url, lookahead=k, models=model_fingerprints(cfg),
                             category_prompts=category_prompt_count(cfg), warmup=warmup)
        runs: list[BenchRecord] = []
    else:
        runs = list(record.runs or [record])
    common = dict(label=label, extra_args=extra_args, env=bench_env(cfg, environ), on_progress=on_progress,
                  on_line=on_line, runner=runner)
    if warmup:
        _mark(files.log, f"server start {start}: warm-up of {warmup} requests, not recorded")
        warm = _one_run(cfg, url, files.warmup_result, files.log, prompts=warmup, **common)
        if not warm.counted:
            return warm
    what = f"paired with {pair}" if pair else "measured until decided" + (f", server start {start}" if start > 1 else "")
    _mark(files.log, f"run {len(runs) + 1} ({what})")
    index = len(runs)
    while files.run_result(index).exists():  # a pair measured again left its earlier files
        index += 1
    run = _one_run(cfg, url, files.run_result(index), files.log, prompts=None, **common)
    run.start, run.pair = start, pair
    wall = (record.wall_time_s or 0.0) + (run.wall_time_s or 0.0)
    new = record.with_runs([*runs, run], wall, label=label, url=url)
    new.write(files.record)
    write_requests_csv(new, files.record.parent)
    return new


def run_probe(cfg: Config, url: str, flags: list[str], files: BenchFiles, record: BenchRecord | None, keep: int, *,
              label: str, prompts: int, environ: Mapping[str, str] | None = None,
              on_progress: OnProgress | None = None, on_line: Callable[[str], None] | None = None,
              runner: BenchRunner) -> tuple[BenchRecord, BenchRecord]:
    """One open-loop run of a request capacity probe (``flags``: ``engine.bench_flags.probe_flags``, its
    result file the first free run=N.json beside ``files.result``), added to the probe's record after
    its first ``keep`` runs (those its search holds; ``record``: None before the first). Returns
    (the run, the probe's record as rewritten)."""
    environ = os.environ if environ is None else environ
    files.result.parent.mkdir(parents=True, exist_ok=True)
    runs = list(record.runs or [record])[:keep] if record is not None else []
    result = Path(flags[flags.index("--result-dir") + 1]) / flags[flags.index("--result-filename") + 1]
    _mark(files.log, f"run {len(runs) + 1} of the probe")
    write_band(cfg, result.parent)  # a prompt file's input-length band, where the probe sends one
    run = _measured(cfg, url, flags, result, files.log, label=label, env=bench_env(cfg, environ), total=prompts,
                    on_progress=on_progress, on_line=on_line, runner=runner)
    k = cfg.lookahead if cfg.draft.method else None
    new = BenchRecord.of_runs(label, [*runs, run], url=url, lookahead=k,
                              wall_time_s=sum(r.wall_time_s or 0.0 for r in [*runs, run]))
    new.models = model_fingerprints(cfg)
    new.write(files.record)
    return run, new


def free_result(files: BenchFiles, start: int) -> Path:
    """The first run=N.json beside ``files.result`` from N = ``start`` on that no earlier run wrote."""
    index = start
    while files.run_result(index).exists():
        index += 1
    return files.run_result(index)
