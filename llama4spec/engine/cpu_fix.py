"""A vLLM general plugin (entry point ``vllm.general_plugins``: ``llama4spec_cpu_expand``) that
makes speculative sampling correct at temperature > 0 on vLLM's CPU build.

The defect (vLLM 0.32.0, the CPU build without a Triton CPU backend): ``vllm/platforms/cpu.py``
registers C++ fallbacks for Triton kernels, among them ``rejection_sampler.expand_kernel`` ->
``vllm/utils/cpu_triton_utils._expand_kernel_impl``, which passes ``_ensure_int64(output)`` to
``torch.ops._C.expand_kernel_impl``. For the float tensors that ``expand_batch_to_tokens`` expands
(per-request temperature, top-p) that is a new int64 copy, written and thrown away, and the input
temperatures are truncated to integers on the way in. The rejection sampler then divides the
target logits by uninitialised memory: measured, 1 of 87 draft tokens accepted at T = 0.8 where the
target puts 0.9999995 on the drafted word (docs/sampling.md has the reproduction).

The fix replaces ``_expand_kernel_impl`` with the kernel's semantics in torch, before the platform
registers its overrides: vLLM's worker loads general plugins first
(``vllm/v1/worker/worker_base.py``: ``load_general_plugins()``, then
``current_platform.register_triton_kernel_overrides()``, which reads the module attribute then).
It does that only on the CPU build and only for the vLLM version it was verified against, and
logs what it did (the server log; ``-v`` shows it). ``VLLM_PLUGINS=""`` (vLLM's own allow-list)
turns it off. No import of this package beyond this module.
"""

from __future__ import annotations

VERIFIED = ("0.32.0",)  # vLLM releases whose CPU fallback this replaces, checked against their source
PLUGIN = "llama4spec_cpu_expand"  # the entry point's name (pyproject.toml)


def expand(output, input_val, cu_num_tokens, replace_from, replace_to, MAX_NUM_TOKENS=None):  # noqa: N803
    """``rejection_sampler.expand_kernel`` in torch: request b's value (``replace_from`` replaced by
    ``replace_to``) into positions ``cu[b-1] .. cu[b]`` of ``output``, in ``output``'s own dtype."""
    import torch

    cu = cu_num_tokens.to(torch.int64)
    counts = torch.diff(cu, prepend=cu.new_zeros(1))
    values = torch.where(input_val == replace_from, torch.full_like(input_val, replace_to), input_val)
    total = int(cu[-1]) if cu.numel() else 0
    output[:total] = torch.repeat_interleave(values, counts).to(output.dtype)


def why_not(version: str, is_cpu: bool, has_triton: bool) -> str | None:
    """Why the fix does not apply here (None: it does)."""
    if not is_cpu:
        return "not the CPU build"
    if has_triton:
        return "a Triton CPU backend is installed, so vLLM runs the Triton kernel itself"
    if version not in VERIFIED:
        return f"vLLM {version} is not a version the fix was verified against ({', '.join(VERIFIED)})"
    return None


def register() -> None:
    """The plugin's entry point: run in every vLLM process (more than once is harmless)."""
    import vllm
    from vllm.logger import init_logger
    from vllm.platforms import current_platform
    from vllm.triton_utils import HAS_TRITON

    logger = init_logger("vllm.plugins.llama4spec_cpu_expand")  # under vllm: its handlers print it
    reason = why_not(vllm.__version__, current_platform.is_cpu(), HAS_TRITON)
    if reason is not None:
        logger.info("llama4spec: CPU expand-kernel fix not applied: %s", reason)
        return
    from vllm.utils import cpu_triton_utils

    cpu_triton_utils._expand_kernel_impl = expand
    logger.info("llama4spec: CPU expand-kernel fix applied (vLLM %s): per-token temperatures and top-p "
                "are expanded in torch", vllm.__version__)


def active(environ) -> str | None:
    """Why the fix would not run in a vLLM started from here (None: it would): its entry point is
    installed and ``VLLM_PLUGINS`` does not leave it out. For the doctor; reads package metadata only."""
    from importlib.metadata import entry_points

    if not any(ep.name == PLUGIN for ep in entry_points(group="vllm.general_plugins")):
        return f"its vLLM plugin ({PLUGIN}) is not installed; reinstall llama4spec (pip install -e .)"
    allowed = environ.get("VLLM_PLUGINS")
    if allowed is not None and PLUGIN not in [p.strip() for p in allowed.split(",")]:
        return f"VLLM_PLUGINS={allowed!r} leaves its vLLM plugin ({PLUGIN}) out"
    return None
