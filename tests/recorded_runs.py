"""Run directories of the shipped tiny sweep as a finished run leaves them, built from made-up records
(no engine): every point measured ``repeats`` times with a little noise, the report, summary and
report.html written by the executor as a resumed run writes them. ``slow`` scales every timed figure
(throughput times it, TPOT and TTFT divided by it): a fixture of a slower build, said so where used."""

from __future__ import annotations

import io
import json
import math
import random
from pathlib import Path

from rich.console import Console

from tests.helpers import REPO

RUNBOOK = REPO / "runbooks" / "tiny_cpu_sweep.yaml"


def _throughput(k: int | None, c: int) -> float:
    """Made-up figures with a shape: speculation helps, less so at higher concurrency."""
    return 100.0 * c ** 0.8 * (1.0 if k is None else (1 + k) / (1 + 0.3 * k * c))


REQUESTS = 40  # a speculative run's requests: three runs pooled put 12 beyond the P90 TPOT


def _requests(k: int, tpot_ms: float, accepted: float) -> list[dict]:
    """Made-up per-request rows: every fourth request (category early_miss) accepts nothing and is
    twice as slow a token, the rest accept as the run does."""
    rows = []
    for i in range(REQUESTS):
        low = i % 4 == 0
        steps, took = 10, 0 if low else round(10 * k * accepted)
        per_pos = [0] * k if low else [round(10 * accepted)] * k
        tpot = tpot_ms * (2.0 if low else 1.0) + 0.01 * i
        rows.append({"id": f"llama4spec-ab12cd34-{i}", "ok": True, "index": i,
                     "category": "early_miss" if low else "clean_start", "ttft_ms": 20.0 + 0.1 * i,
                     "tpot_ms": tpot, "e2e_ms": 20.0 + 31 * tpot, "queue_ms": 0.5 * (i % 5),
                     "arrival_ms": 50.0 * i, "output_tokens": 32, "drafts": steps, "draft_tokens": steps * k,
                     "accepted": took, "accepted_per_pos": per_pos})
    return rows


def _run(planned, k: int | None, c: int, factor: float, accepted: float) -> dict:
    tput = _throughput(k, c) * factor * (1.0 if k is None else 0.4 + 0.6 * accepted)
    drafts = 100
    accepted_tokens = round(drafts * k * accepted) if k else 0
    return {
        "kind": "llama4spec.bench", "label": planned.id, "argv": planned.argv, "returncode": 0, "lookahead": k,
        "acceptance": None if k is None else {
            "num_drafts": drafts, "num_draft_tokens": drafts * k, "num_accepted_tokens": accepted_tokens,
            "accepted_per_pos": [round(drafts * accepted)] * k,
            "mean_acceptance_length": 1.0 + accepted_tokens / drafts,
            "acceptance_rate": accepted_tokens / (drafts * k), "acceptance_rate_per_position": [accepted] * k},
        "result": {"request_rate": "inf", "burstiness": 1.0, "output_throughput": tput, "mean_tpot_ms": 1000.0 * c / tput, "mean_ttft_ms": (20.0 + c) / factor,
                   "max_concurrency": c, "completed": 8, "request_throughput": tput / 32,
                   "total_token_throughput": 1.5 * tput},
        **({"requests": _requests(k, 1000.0 * c / tput, accepted)} if k else {}),
    }


def finished_run(run_dir: Path, *overrides: str, repeats: int = 3, seed: int = 0, slow: float = 1.0,
                 noise: float = 0.03, accepted: float = 1.0, runbook: Path = RUNBOOK,
                 console: Console | None = None) -> Path:
    """The run directory of ``runbook`` (a sweep; the tiny sweep by default) with every point measured
    ``repeats`` times; returns it."""
    from llama4spec.runbook import execute
    from llama4spec.runbook.plan import plan_file

    plan = plan_file(runbook, lambda name: run_dir, list(overrides), repeats=repeats)
    rng = random.Random(seed)
    for p in plan.steps:
        if p.kind != "bench":
            continue
        cfg = p.composed.cfg
        k, c = (cfg.lookahead if cfg.draft.method else None), cfg.bench.max_concurrency
        # sampling at a temperature accepts less (a shape for the temperature findings)
        share = accepted * (0.6 if float(cfg.bench.temperature) > 0 else 1.0)
        runs = [_run(p, k, c, slow * math.exp(rng.gauss(0.0, noise)), share) for _ in range(repeats)]
        record = dict(runs[0], repeats=repeats, warmup=0, runs=runs)
        record["result"] = dict(runs[repeats // 2]["result"])
        p.artifacts["record"].parent.mkdir(parents=True, exist_ok=True)
        p.artifacts["record"].write_text(json.dumps(record))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "status.json").write_text(json.dumps({"runbook": plan.runbook.name}))
    console = console or Console(record=True, width=140, file=io.StringIO())
    assert execute.run(plan, console, gate=None, environ={}, resume=True) == 0, console.export_text()
    return run_dir


def set_version(run_dir: Path, name: str, version: str) -> None:
    """host.json of ``run_dir`` naming another version of ``name`` (a fixture of an upgrade)."""
    path = run_dir / "host.json"
    data = json.loads(path.read_text())
    data["versions"][name] = version
    path.write_text(json.dumps(data))


CAPACITY = REPO / "runbooks" / "tiny_cpu_capacity.yaml"
CAPACITIES = {"capacity-none-search": 3.0, "capacity-tiny_eagle-k1-search": 5.0, "capacity-tiny_eagle-k3-search": 7.0}


def simulated_search(settings, capacity: float):
    """A whole request capacity search, as the search step with ``settings`` (a capacity step's
    ``Settings``) makes it (``search: fit`` by default, ``bisect`` when they say so), against a server whose attainment falls smoothly
    through the target 0.9 at ``capacity`` req/s (logistic in log rate, slope 8), each run's share
    rounded to whole requests with a seeded spread; TPOT binds (TTFT holds in every run)."""
    from llama4spec.capacity import probing as cap
    from llama4spec.capacity.strategies.base import of

    rng = random.Random(int(capacity * 1000))
    search = cap.begin(settings.bisect(0.9))
    requests = cap.decidable_requests(search.settings)
    strategy = of(settings, 0.9)
    while (move := strategy.move(search))[0] is not None:
        rate = move[0]
        mean = 1 / (1 + math.exp(-(math.log(9) - 8 * math.log(rate / capacity))))
        good = sum(rng.random() < mean for _ in range(requests))
        run = cap.Run(good / requests, requests, "tpot", 30.0 * rate, 1.5, {"ttft": 1.0, "tpot": good / requests})
        search = strategy.add(search, rate, run, move[1])
    return search


def _probe_record(label: str, probe, thresholds: dict[str, float]) -> dict:
    """A probe's record.json: one run per run of the probe, its request throughput and P90s (over
    the thresholds when the probe failed)."""
    runs = []
    for run in probe.runs:
        over = 1.0 if run.attainment >= 0.9 else 1.6
        result = {"completed": run.requests, "failed": 0, "request_throughput": probe.rate * 0.97,
                  "output_throughput": run.output_throughput,
                  **{f"p90_{m}_ms": 0.8 * over * v for m, v in thresholds.items()},
                  **{f"median_{m}_ms": 0.5 * v for m, v in thresholds.items()}}
        runs.append({"kind": "llama4spec.bench", "label": label, "returncode": 0, "result": result})
    return dict(runs[0], repeats=len(runs), warmup=0, runs=runs)


def finished_capacity_run(run_dir: Path, capacities: dict[str, float] | None = None,
                          console: Console | None = None, runbook: Path = CAPACITY) -> Path:
    """The run directory of the tiny capacity runbook as a finished run leaves it: the baseline's
    record (its medians: TTFT 20 ms, TPOT 10 ms), each setting's whole search (``simulated_search``)
    in its search.json with its probes' records, the capacity report and report.html written by the
    executor as a resumed run writes them; returns it."""
    from llama4spec.results.bench import BenchRecord
    from llama4spec.runbook import execute
    from llama4spec.capacity.write_report import probe_dir
    from llama4spec.runbook.plan import plan_file
    from llama4spec.capacity import search as search_step

    plan = plan_file(runbook, lambda name: run_dir, [])
    base = plan.get("bench_baseline")
    record = BenchRecord(label=base.id, returncode=0, argv=base.argv, warmup=2,
                         result={"completed": 8, "failed": 0, "median_ttft_ms": 20.0, "median_tpot_ms": 10.0,
                                 "output_throughput": 50.0})
    record.write(base.artifacts["record"])
    for sid, capacity in (capacities or CAPACITIES).items():
        p = plan.get(sid)
        thresholds, basis = search_step.thresholds_of(plan, p)
        search = simulated_search(p.step.keys.settings, capacity)
        p.artifacts["search"].parent.mkdir(parents=True, exist_ok=True)
        p.artifacts["search"].write_text(json.dumps(search_step.document(
            search, search_step._identity(plan, p, thresholds), thresholds, basis, p.step.keys.settings)))
        for probe in search.probes:
            where = probe_dir(p.dir, probe.rate)
            where.mkdir(parents=True, exist_ok=True)
            (where / "record.json").write_text(json.dumps(_probe_record(sid, probe, thresholds)))
    (run_dir / "status.json").write_text(json.dumps({"runbook": plan.runbook.name}))
    console = console or Console(record=True, width=160, file=io.StringIO())
    assert execute.run(plan, console, gate=None, environ={}, resume=True) == 0, console.export_text()
    return run_dir
