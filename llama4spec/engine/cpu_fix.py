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
The same plugin gives the CPU build synthetic acceptance (``rejection_sample_method: synthetic``),
which vLLM 0.32's C++ fallbacks of the two rejection kernels refuse ("Synthetic acceptance not
supported with CPU sampling"): ``synthetic_greedy`` and ``synthetic_random`` run the Triton kernels'
synthetic branch in torch (position i accepted when the uniform draw is below the conditional rate
at i and the draft token is not padding; the first rejection ends the request's tokens) and hand
every other launch to vLLM's own fallback unchanged.

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


def _synthetic(output, cu, draft, uniform, rates, max_spec_len, skip, rejected_token, bonus) -> None:
    """The Triton kernels' synthetic branch for every request not ``skip``-ped (its row of ``output``)."""
    cu_list = [int(x) for x in cu.tolist()]
    draft_list, uniform_list, rate_list = draft.tolist(), uniform.tolist(), rates.tolist()
    start = 0
    for req, end in enumerate(cu_list):
        if not skip(req):
            rejected = False
            for pos in range(end - start):
                accepted = uniform_list[start + pos] < rate_list[pos] and draft_list[start + pos] >= 0
                output[req, pos] = draft_list[start + pos] if accepted else rejected_token(start + pos)
                if not accepted:
                    rejected = True
                    break
            if not rejected:
                output[req, end - start] = bonus(req)
        start = end


def synthetic_greedy(fallback):
    """vLLM's CPU fallback of the greedy rejection kernel, with the synthetic branch in torch."""

    def _rejection_greedy_sample_kernel_impl(output_token_ids, cu_num_draft_tokens, draft_token_ids, target_argmax,
                                             bonus_token_ids, is_greedy, max_spec_len, uniform_probs=None,
                                             synthetic_conditional_rates=None, SYNTHETIC_MODE=False):  # noqa: N803
        if not SYNTHETIC_MODE:
            return fallback(output_token_ids, cu_num_draft_tokens, draft_token_ids, target_argmax, bonus_token_ids,
                            is_greedy, max_spec_len, uniform_probs, synthetic_conditional_rates, SYNTHETIC_MODE)
        greedy = None if is_greedy is None else is_greedy.tolist()
        argmax, bonus = target_argmax.tolist(), bonus_token_ids.reshape(-1).tolist()
        _synthetic(output_token_ids, cu_num_draft_tokens, draft_token_ids, uniform_probs, synthetic_conditional_rates,
                   max_spec_len, lambda r: greedy is not None and not greedy[r], lambda i: argmax[i],
                   lambda r: bonus[r])
        return None

    return _rejection_greedy_sample_kernel_impl


def synthetic_random(fallback):
    """vLLM's CPU fallback of the random rejection kernel, with the synthetic branch in torch."""

    def _rejection_random_sample_kernel_impl(output_token_ids, cu_num_draft_tokens, draft_token_ids, draft_probs,
                                             target_probs, bonus_token_ids, recovered_token_ids, uniform_probs,
                                             is_greedy, max_spec_len, vocab_size, synthetic_conditional_rates=None,
                                             NO_DRAFT_PROBS=False, SYNTHETIC_MODE=False):  # noqa: N803
        if not SYNTHETIC_MODE:
            return fallback(output_token_ids, cu_num_draft_tokens, draft_token_ids, draft_probs, target_probs,
                            bonus_token_ids, recovered_token_ids, uniform_probs, is_greedy, max_spec_len, vocab_size,
                            synthetic_conditional_rates, NO_DRAFT_PROBS, SYNTHETIC_MODE)
        greedy = is_greedy.tolist()
        recovered, bonus = recovered_token_ids.tolist(), bonus_token_ids.reshape(-1).tolist()
        _synthetic(output_token_ids, cu_num_draft_tokens, draft_token_ids, uniform_probs, synthetic_conditional_rates,
                   max_spec_len, lambda r: bool(greedy[r]), lambda i: recovered[i], lambda r: bonus[r])
        return None

    return _rejection_random_sample_kernel_impl


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
    for name, wrap in (("_rejection_greedy_sample_kernel_impl", synthetic_greedy),
                       ("_rejection_random_sample_kernel_impl", synthetic_random)):
        current = getattr(cpu_triton_utils, name)
        if not getattr(current, "llama4spec_synthetic", False):  # once, however often the plugin loads
            wrapped = wrap(current)
            wrapped.llama4spec_synthetic = True
            setattr(cpu_triton_utils, name, wrapped)
    logger.info("llama4spec: CPU expand-kernel fix applied (vLLM %s): per-token temperatures and top-p "
                "are expanded in torch; synthetic acceptance runs in torch", vllm.__version__)


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
