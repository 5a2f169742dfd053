"""vLLM's own serving benchmark (``vllm.benchmarks.serve``), run against a server and read back.

The flags come from a pure builder; the benchmark runs in its own process group (so a
failure or an interruption never takes this process or its servers with it) and writes vLLM's
result JSON. Acceptance figures come from ``/metrics`` before/after deltas of the server.

``python -m llama4spec.bench FLAGS`` is ``vllm bench serve FLAGS`` for builds whose ``vllm``
console script does not start (the CPU wheel).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from llama4spec.config.schema import Config
from llama4spec.metrics import AcceptanceCounters, from_prometheus_text

BENCH_MODULE = "llama4spec.bench"


def bench_flags(cfg: Config, url: str, result_dir: Path, result_filename: str, label: str,
                extra_args: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The flags of ``vllm bench serve`` for ``cfg.bench`` against ``url`` (pure)."""
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
        "--num-prompts", str(b.num_prompts),
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
    """What actually runs: this module's entry point, which works with the GPU and CPU builds."""
    return [sys.executable, "-m", BENCH_MODULE, *flags]


def bench_env(cfg: Config, environ: Mapping[str, str]) -> dict[str, str]:
    """The benchmark's extra environment: the API key (by name from serve.api_key_env), if any."""
    env = dict(cfg.env)
    name = cfg.serve.api_key_env
    if name and environ.get(name):
        env["OPENAI_API_KEY"] = environ[name]
    return env


def scrape(url: str, api_key: str | None = None) -> AcceptanceCounters | None:
    """Spec-decode counters from ``URL/metrics``; None when the page cannot be read."""
    import requests

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = requests.get(f"{url.rstrip('/')}/metrics", timeout=10, headers=headers)
        resp.raise_for_status()
    except requests.RequestException:
        return None
    return from_prometheus_text(resp.text)


def acceptance_record(delta: AcceptanceCounters | None, k: int | None) -> dict[str, Any] | None:
    """The acceptance figures of one benchmark, from /metrics deltas (None without drafts)."""
    if delta is None or not delta.num_drafts:
        return None
    return {
        "num_drafts": delta.num_drafts,
        "num_draft_tokens": delta.num_draft_tokens,
        "num_accepted_tokens": delta.num_accepted_tokens,
        "accepted_per_pos": delta.accepted_per_pos,
        "mean_acceptance_length": delta.mean_acceptance_length,
        "acceptance_rate": delta.acceptance_rate,
        "acceptance_rate_per_position": delta.rate_per_position(k),
    }


def counts(record: Mapping[str, Any]) -> bool:
    """Whether a bench record counts: the benchmark exited 0 and completed at least one request."""
    return record.get("returncode") == 0 and (record.get("result") or {}).get("completed", 0) > 0


@dataclass
class BenchOutcome:
    returncode: int
    result_path: Path
    record_path: Path
    log_path: Path
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return counts(self.record)

    @property
    def failure(self) -> str:
        """Why the benchmark does not count, in one line."""
        if self.returncode != 0:
            return f"the benchmark exited with code {self.returncode}; its log: {self.log_path}"
        failed = self.record.get("result", {}).get("failed", "?")
        return f"the benchmark completed no request ({failed} failed); its log: {self.log_path}"


def run_bench(cfg: Config, url: str, out_dir: Path, name: str, *, label: str | None = None,
              extra_args: list[str] | tuple[str, ...] = (), environ: Mapping[str, str] | None = None) -> BenchOutcome:
    """Run the benchmark against ``url``; write ``NAME.vllm.json`` (vLLM's) and ``NAME.json`` (record)."""
    import os

    from llama4spec.server import run_to_completion

    environ = os.environ if environ is None else environ
    out_dir.mkdir(parents=True, exist_ok=True)
    result_path = out_dir / f"{name}.vllm.json"
    flags = bench_flags(cfg, url, out_dir, result_path.name, label or name, extra_args)
    env = bench_env(cfg, environ)
    before = scrape(url, env.get("OPENAI_API_KEY"))
    started = time.monotonic()
    code = run_to_completion(exec_argv(flags), env, out_dir / f"{name}.log")
    wall = time.monotonic() - started
    after = scrape(url, env.get("OPENAI_API_KEY"))
    delta = after - before if before is not None and after is not None else None
    k = cfg.lookahead if cfg.draft.method else None
    record: dict[str, Any] = {
        "kind": "llama4spec.bench",
        "label": label or name,
        "url": url,
        "argv": display_argv(flags),
        "returncode": code,
        "wall_time_s": wall,
        "lookahead": k,
        "acceptance": acceptance_record(delta, k),
    }
    if code == 0 and result_path.is_file():
        record["result"] = json.loads(result_path.read_text())
    record_path = out_dir / f"{name}.json"
    record_path.write_text(json.dumps(record, indent=2) + "\n")
    return BenchOutcome(code, result_path, record_path, out_dir / f"{name}.log", record)


def main(argv: list[str] | None = None) -> int:
    """``vllm bench serve`` through the Python API (the CPU wheel's console script does not start)."""
    import vllm.platforms  # noqa: F401  (select the platform before the benchmark imports kernels)
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    bench_main(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
