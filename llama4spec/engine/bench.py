"""The flags of vLLM's serving benchmark (``vllm bench serve``) for a config: pure."""

from __future__ import annotations

import sys
from pathlib import Path

from llama4spec.config.schema import Config

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
                extra_args: list[str] | tuple[str, ...] = (), prompts: int | None = None) -> list[str]:
    """The flags of ``vllm bench serve`` for ``cfg.bench`` against ``url`` (pure); ``prompts``
    replaces the counted run's number of prompts (a warm-up run's)."""
    b = cfg.bench
    flags = ["--backend", "openai", "--base-url", url.rstrip("/"), "--endpoint", "/v1/completions",
             "--model", cfg.target.model]
    if cfg.target.tokenizer:
        flags += ["--tokenizer", cfg.target.tokenizer]
    if cfg.serve.served_model_name:
        flags += ["--served-model-name", cfg.serve.served_model_name]
    if cfg.target.trust_remote_code:
        flags.append("--trust-remote-code")
    flags += ["--dataset-name", b.dataset_name]
    if b.dataset_path:
        flags += ["--dataset-path", b.dataset_path]
    if b.input_len is not None:
        flags += ["--input-len", str(b.input_len)]
    if b.output_len is not None:
        flags += ["--output-len", str(b.output_len)]
    flags += [
        "--num-prompts", str(num_prompts(cfg) if prompts is None else prompts),
        WARMUP_FLAG, "0",
        "--max-concurrency", str(b.max_concurrency),
        "--request-rate", str(b.request_rate),
        "--seed", str(b.seed),
        "--temperature", str(b.temperature),
        "--percentile-metrics", "ttft,tpot,itl,e2el",
        "--metric-percentiles", "50,99",
        "--label", label,
        "--save-result", "--result-dir", str(result_dir), "--result-filename", result_filename,
        "--disable-tqdm",
    ]
    return flags + list(extra_args)


def display_argv(flags: list[str]) -> list[str]:
    """The ``vllm bench serve`` command a user could paste."""
    return ["vllm", "bench", "serve", *flags]


def exec_argv(flags: list[str]) -> list[str]:
    """What actually runs: the project's entry point, which works with the GPU and CPU builds."""
    return [sys.executable, "-m", BENCH_MODULE, *flags]
