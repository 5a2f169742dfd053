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
    flags += dataset_flags(cfg)
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


# ---- prompt categories: one category per benchmark point (bench.category) ----

CATEGORY_FILE_PROMPTS = 16  # prompts in each shipped category file of the built-in prompts


def builtin_category_file(category: str) -> Path:
    """The shipped prompt file of one category of the built-in prompts (vLLM's ``custom`` format)."""
    from llama4spec.config.compose import conf_dir

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
        from llama4spec.config.validate import bench_category_problem
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
        from llama4spec.config.validate import bench_category_problem

        problem = bench_category_problem(cfg)  # the rule `validate` applies
        if problem:
            from llama4spec.errors import UserError

            raise UserError(problem)
        prompt_file = builtin_category_file(b.category)
    flags = category_flags(cfg, prompt_file)
    if flags is not None:
        return flags
    return ["--dataset-name", b.dataset_name, *(["--dataset-path", b.dataset_path] if b.dataset_path else [])]


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
