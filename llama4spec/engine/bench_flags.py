"""The flags of vLLM's serving benchmark (``vllm bench serve``) for a config: pure."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Mapping

from llama4spec.config import prefix_repetition
from llama4spec.config.schema import Config
from llama4spec.config.validate import SLO_METRICS
from llama4spec.errors import UserError

# ``python -m llama4spec.serving.vllm_bench FLAGS`` is ``vllm bench serve FLAGS`` for builds whose
# ``vllm`` console script does not start (the CPU wheel).
BENCH_MODULE = "llama4spec.serving.vllm_bench"


# Warm-up requests are a run of their own (a runbook's ``warmup:``), never part of a counted one:
# vLLM's --num-warmups requests would land in the acceptance counters measured around it.
WARMUP_FLAG = "--num-warmups"


def num_prompts(cfg: Config) -> int:
    """The prompts one counted run sends: ``bench.num_prompts``, raised to
    ``bench.prompts_per_concurrency`` x ``bench.max_concurrency`` when that is set and larger."""
    b = cfg.bench
    per_slot = b.prompts_per_concurrency or 0
    return max(b.num_prompts, per_slot * b.max_concurrency)


def bench_flags(cfg: Config, url: str, result_dir: Path, result_filename: str, label: str,
                extra_args: list[str] | tuple[str, ...] = (), prompts: int | None = None,
                goodput: Mapping[str, float] | None = None) -> list[str]:
    """The flags of ``vllm bench serve`` for ``cfg.bench`` against ``url`` (pure); ``prompts``
    replaces the counted run's number of prompts (a warm-up run's). ``goodput``: the SLO's
    thresholds in ms when resolved by the caller (``slo.relative_to``); by default the config's own
    (``static_thresholds``)."""
    b = cfg.bench
    return _flags(cfg, url, result_dir, result_filename, label,
                  prompts=num_prompts(cfg) if prompts is None else prompts, concurrency=b.max_concurrency,
                  rate=str(b.request_rate), goodput=static_thresholds(cfg) if goodput is None else goodput,
                  detailed=False) + list(extra_args)


MAX_PROBE_RATE = 10_000.0  # requests per second
MAX_PROBE_DURATION_S = 3600.0


def probe_prompts(cfg: Config, rate: float, duration_s: float, least: int = 0) -> int:
    """The prompts an open-loop probe sends: enough to keep ``rate`` up for ``duration_s``, and at
    least ``bench.num_prompts`` and ``least`` (the requests a run needs for its verdict)."""
    return max(cfg.bench.num_prompts, math.ceil(duration_s * rate), least)


def probe_flags(cfg: Config, url: str, result_dir: Path, result_filename: str, label: str, rate: float,
                duration_s: float, goodput: Mapping[str, float] | None = None,
                extra_args: list[str] | tuple[str, ...] = (), least: int = 0) -> list[str]:
    """The flags of one open-loop probe at ``rate`` requests per second (pure): Poisson arrivals
    (gamma with ``bench.burstiness``), no client concurrency cap (so TTFT includes every wait),
    ``probe_prompts`` prompts (at least ``least``), the SLO's ``--goodput`` and per-request data (``--save-detailed``)."""
    thresholds = static_thresholds(cfg) if goodput is None else goodput
    problems = []
    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and 0 < rate <= MAX_PROBE_RATE):
        problems.append(f"a probe's request rate must lie in (0, {MAX_PROBE_RATE:g}] requests per second, not {rate}")
    if not (isinstance(duration_s, (int, float)) and math.isfinite(duration_s) and 0 < duration_s <= MAX_PROBE_DURATION_S):
        problems.append(f"a probe's duration must lie in (0, {MAX_PROBE_DURATION_S:g}] seconds, not {duration_s}")
    if not thresholds:
        problems.append("a probe measures attainment of an SLO: choose one (slo=interactive) or give "
                        "slo.ttft_ms, slo.tpot_ms or slo.e2el_ms")
    if problems:
        raise UserError(*problems)
    return _flags(cfg, url, result_dir, result_filename, label, prompts=probe_prompts(cfg, rate, duration_s, least),
                  concurrency=None, rate=repr(float(rate)), goodput=thresholds, detailed=True) + list(extra_args)


def _flags(cfg: Config, url: str, result_dir: Path, result_filename: str, label: str, *, prompts: int,
           concurrency: int | None, rate: str, goodput: Mapping[str, float], detailed: bool) -> list[str]:
    b = cfg.bench
    flags = ["--backend", "openai", "--base-url", url.rstrip("/"), "--endpoint", "/v1/completions",
             "--model", cfg.target.model]
    if cfg.target.tokenizer:
        flags += ["--tokenizer", cfg.target.tokenizer]
    if cfg.serve.served_model_name:
        flags += ["--served-model-name", cfg.serve.served_model_name]
    if cfg.target.trust_remote_code:
        flags.append("--trust-remote-code")
    flags += dataset_flags(cfg)
    if b.input_band is not None and "--dataset-path" in flags:  # the prompt file's band, written beside the result
        flags[flags.index("--dataset-path") + 1] = str(band_file(result_dir, b.input_band))
    if b.input_len is not None:
        flags += ["--input-len", str(b.input_len)]
    if b.dataset_name == "speed_bench":  # its own flags: the subset, and an output length that defaults to 4096
        flags += ["--speed-bench-dataset-subset", b.speed_bench_subset] if b.speed_bench_subset else []
        flags += ["--speed-bench-output-len", str(b.output_len)] if b.output_len is not None else []
    if b.output_len is not None:
        flags += ["--output-len", str(b.output_len)]
    flags += ["--num-prompts", str(prompts), WARMUP_FLAG, "0"]
    if concurrency is not None:
        flags += ["--max-concurrency", str(concurrency)]
    flags += ["--request-rate", rate]
    if b.burstiness is not None:
        flags += ["--burstiness", _number(b.burstiness)]
    percentiles = ["50", "99"]
    if goodput:  # the attainment quantile too, for the metric that binds
        percentiles = sorted({*percentiles, _number(round(100 * cfg.slo.attainment, 6))}, key=float)
    flags += [
        "--seed", str(b.seed),
        "--temperature", str(b.temperature),
        "--percentile-metrics", "ttft,tpot,itl,e2el",
        "--metric-percentiles", ",".join(percentiles),
    ]
    if goodput:
        flags += ["--goodput", *goodput_pairs(goodput)]
    flags += ["--label", label,
              "--save-result", "--result-dir", str(result_dir), "--result-filename", result_filename]
    if detailed:
        flags.append("--save-detailed")
    flags.append("--disable-tqdm")
    return flags


def band_file(result_dir: Path, band: str) -> Path:
    """Where a run's prompts of one input-length band (``bench.input_band``) are written before it."""
    return result_dir / f"prompts-band-{band}.jsonl"


# ---- the SLO: vLLM's --goodput ----

def static_thresholds(cfg: Config) -> dict[str, float]:
    """The SLO's thresholds in ms known before anything runs: the given ``slo.*_ms``; empty for
    ``slo=none`` and for an SLO relative to a step (``slo.relative_to``: ``resolve_thresholds``
    once that step has measured)."""
    return {} if cfg.slo.relative_to is not None else {m: float(v) for m, v in cfg.slo.thresholds().items()}


def resolve_thresholds(cfg: Config, medians: Mapping[str, float]) -> dict[str, float]:
    """An SLO relative to a step, resolved: each multiplier times that step's median of its metric
    (``medians``: metric -> ms, e.g. from ``median_ttft_ms``), beside the SLO's absolute thresholds."""
    slo = cfg.slo
    out = {m: float(v) for m, v in slo.thresholds().items()}
    for m, factor in slo.multipliers().items():
        median = medians.get(m)
        if not (isinstance(median, (int, float)) and math.isfinite(median) and median > 0):
            raise UserError(f"slo.{m}={factor:g} is relative to step {slo.relative_to}, whose record has no "
                            f"positive median {m.upper()}; measure that step again or give slo.{m}_ms")
        out[m] = factor * float(median)
    return {m: out[m] for m in SLO_METRICS if m in out}


def goodput_pairs(thresholds: Mapping[str, float]) -> list[str]:
    """``--goodput``'s KEY:VALUE words (ms), in vLLM's metric order."""
    return [f"{m}:{_number(thresholds[m])}" for m in SLO_METRICS if m in thresholds]


def _number(value: float) -> str:
    """A number as vLLM's float() reads it back exactly: 1000, 0.5, 33.333333333333336."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def display_argv(flags: list[str]) -> list[str]:
    """The ``vllm bench serve`` command a user could paste."""
    return ["vllm", "bench", "serve", *flags]


def exec_argv(flags: list[str]) -> list[str]:
    """What actually runs: the project's entry point, which works with the GPU and CPU builds."""
    return [sys.executable, "-m", BENCH_MODULE, *flags]


# ---- prompt categories: one category per benchmark point (bench.category) ----

CATEGORY_FILE_PROMPTS = 16  # prompts in each shipped category file of the built-in prompts


def builtin_category_file(category: str) -> Path:
    """The shipped prompt file of one category of the built-in prompts (vLLM's ``custom`` format)."""
    from llama4spec.config.conf_dirs import conf_dir

    return conf_dir() / "dataset" / "prompts" / f"builtin-{category}.jsonl"


def category_flags(cfg: Config, prompt_file: Path | None) -> list[str] | None:
    """The dataset flags of a point that benchmarks ``bench.category`` alone (None without a
    category): vLLM's own filter for a spec_bench-format file (mt-bench's question file), else
    ``prompt_file`` (the category's prompts) as vLLM's ``custom`` dataset. Pure; UserError when
    neither can serve the category."""
    b = cfg.bench
    if b.category is None:
        return None
    if b.dataset_name == "spec_bench":
        path = ["--dataset-path", b.dataset_path] if b.dataset_path else []
        return ["--dataset-name", "spec_bench", *path, "--spec-bench-category", b.category]
    if prompt_file is None:
        from llama4spec.config.categories import bench_category_problem
        from llama4spec.errors import UserError

        raise UserError(bench_category_problem(cfg) or f"bench.category={b.category}: no prompt file for it")
    flags = ["--dataset-name", "custom", "--dataset-path", str(prompt_file)]
    if not cfg.dataset.chat_template:
        flags.append("--skip-chat-template")
    return flags


def dataset_flags(cfg: Config) -> list[str]:
    """``--dataset-name`` / ``--dataset-path`` (and a category's own flags) for ``cfg.bench``."""
    b = cfg.bench
    prompt_file = None
    if b.category is not None and cfg.dataset.name == "builtin" and b.dataset_name != "spec_bench":
        from llama4spec.config.categories import bench_category_problem

        problem = bench_category_problem(cfg)  # the rule `validate` applies
        if problem:
            from llama4spec.errors import UserError

            raise UserError(problem)
        prompt_file = builtin_category_file(b.category)
    flags = category_flags(cfg, prompt_file)
    if flags is not None:
        return flags
    flags = ["--dataset-name", b.dataset_name, *(["--dataset-path", b.dataset_path] if b.dataset_path else [])]
    if b.dataset_name == prefix_repetition.NAME:
        flags += prefix_repetition.flags(cfg)
    if b.dataset_name == "custom" and not cfg.dataset.chat_template:  # prompts sent as written, as a category's are
        flags.append("--skip-chat-template")
    return flags


def category_prompt_count(cfg: Config) -> int | None:
    """How many distinct prompts a category point has (None: unknown here, or no category)."""
    b = cfg.bench
    if b.category is None or b.dataset_name == "spec_bench" or cfg.dataset.name != "builtin":
        return None
    return CATEGORY_FILE_PROMPTS


def oversampling_warning(cfg: Config) -> str | None:
    """A category point whose concurrency (or number of requests) exceeds its distinct prompts
    repeats prompts: the warning to show, or None."""
    prompts = category_prompt_count(cfg)
    if prompts is None:
        return None
    b = cfg.bench
    if b.max_concurrency > prompts:
        return (f"category {b.category}: concurrency {b.max_concurrency} > its {prompts} prompts: "
                f"the benchmark oversamples (repeats prompts); lower bench.max_concurrency to {prompts} or less")
    if num_prompts(cfg) > prompts:
        return (f"category {b.category}: {num_prompts(cfg)} requests from {prompts} prompts: "
                f"the benchmark oversamples (repeats prompts)")
    return None
