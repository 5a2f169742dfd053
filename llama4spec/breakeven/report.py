"""A breakeven step's report: its bench records read back as runs, the map built, written and shown."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from rich.console import Console

from llama4spec.breakeven import tables as report
from llama4spec.breakeven.map_fit import Runs, build
from llama4spec.analysis.points import dotted
from llama4spec.files import write_atomic
from llama4spec.breakeven.records import BreakevenRecord
from llama4spec.runbook.measured import measured_in_plan
from llama4spec.runbook.rundir import Measured
from llama4spec.records.io import checked, write_checked


def runs_of(measured: Mapping[str, Measured]) -> tuple[list[Runs], list[Runs], list[Runs]]:
    """(no speculation, synthetic, the real draft) from the bench records and their configs."""
    base, synthetic, real = [], [], []
    for pid, m in measured.items():
        cfg, rec = m.config, m.record
        throughputs = tuple(rec.samples("output_throughput"))
        concurrency = int(rec.figure("max_concurrency") or dotted(cfg, "bench.max_concurrency") or 0)
        if not dotted(cfg, "draft.method"):
            base.append(Runs(concurrency, throughputs, label=pid))
            continue
        k = int(dotted(cfg, "lookahead"))
        length = dotted(cfg, "draft.synthetic_acceptance_length")
        runs = Runs(concurrency, throughputs, k, None if length is None else float(length),
                    tuple(rec.acceptance_samples()), pid)
        (real if length is None else synthetic).append(runs)
    return base, synthetic, real


def run_report(plan, planned, console: Console, not_run: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    files = planned.artifacts
    ids = planned.step.keys.points
    measured = measured_in_plan(plan, ids)
    base, synthetic, real = runs_of(measured)
    keys, left_out = planned.step.keys, []
    if keys.blocks:  # each block's speedup a run of its point; no between-start term (the blocks' spread holds it)
        from llama4spec.breakeven import blocks

        paired = {pid: plan.get(pid).step.keys.pair_with for pid in ids if plan.get(pid).step.keys.pair_with}
        base, synthetic, real, left_out = blocks.as_ratios(paired, base, synthetic, real)
        noise = blocks.noise(keys.blocks)
    else:
        from llama4spec.stats.components import pooled
        from llama4spec.runbook.noise_prior import of_sweep

        prior = of_sweep({"noise_prior": keys.prior}, [m.config for m in measured.values()])
        noise = pooled(prior, {pid: m.record.samples("output_throughput") for pid, m in measured.items()},
                       {pid: m.record.sample_starts("output_throughput") for pid, m in measured.items()})
    m = build(base, synthetic, real, noise=noise, given=keys.given)
    if left_out:
        m = dataclasses.replace(m, notes=(*m.notes, *left_out))
    missing = {pid: (not_run or {}).get(pid, "no record") for pid in ids if pid not in measured}
    record = checked(BreakevenRecord, files["analysis"], {**report.to_record(m, keys.blocks), "plot": [],
                                                          "self_check": report.verdict(m), "not_measured": missing})
    files["report"].parent.mkdir(parents=True, exist_ok=True)  # the map's record checked: nothing half-written
    series = report.plot(m, files["plot"]) if m.curves else []
    text = report.markdown(m, files["plot"].name if m.curves else None, keys.blocks)
    if missing:
        text += "\nnot measured:\n\n" + "".join(f"- {pid}: {why}\n" for pid, why in missing.items())
    write_atomic(files["report"], text)
    record = {**record, "plot": series}
    write_checked(BreakevenRecord, files["analysis"], record)
    report.render(console, m)
    return text, record
