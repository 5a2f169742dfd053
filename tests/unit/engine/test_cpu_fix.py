"""The vLLM plugin that fixes the CPU build's expand kernel (``engine.cpu_fix``): its torch
replacement against the kernel's semantics and against vLLM's broken fallback, where it applies,
and the doctor's refusal of temperature > 0 with a draft on the CPU build without it."""

from __future__ import annotations

import pytest

from llama4spec.engine import cpu_fix
from tests.helpers import REPO, run_cli, vllm_cpu_kernels

torch = pytest.importorskip("torch")


def _reference(values, cu, replace_from, replace_to, size):
    """expand_kernel as vLLM's Triton source states it, one request at a time."""
    out, start = [None] * size, 0
    for v, end in zip(values, cu):
        for i in range(start, end):
            out[i] = replace_to if v == replace_from else v
        start = end
    return out


@pytest.mark.parametrize("dtype, values, replace", [
    (torch.float32, [0.8, 0.0, 0.6], (0, 1)),  # temperatures: greedy (GREEDY_TEMPERATURE 0) becomes 1
    (torch.float32, [0.95, 1.0, 0.5], (0, 0)),  # top-p
    (torch.int32, [5, 0, 7], (0, 0)),  # top-k
])
def test_the_replacement_expands_like_the_kernel_in_the_output_dtype(dtype, values, replace) -> None:
    cu = torch.tensor([2, 5, 6], dtype=torch.int32)
    x = torch.tensor(values, dtype=dtype)
    out = torch.full((8,), 99, dtype=dtype)
    cpu_fix.expand(out, x, cu, *replace)
    expected = _reference(values, [2, 5, 6], *replace, 6)
    assert out[:6].tolist() == pytest.approx(expected) and out.dtype == dtype
    assert out[6:].tolist() == [99, 99]  # beyond the last request: untouched, as the kernel's mask leaves it


def test_vllms_cpu_fallback_loses_float_outputs() -> None:
    """The defect itself, on vLLM's own function: the float output is never written. The function
    comes from a fresh copy of vLLM's module: in a process where vLLM loaded its general plugins
    (another test's config did), the fix has already replaced the module's attribute."""
    import importlib.util

    pytest.importorskip("vllm.utils.cpu_triton_utils")
    spec = importlib.util.find_spec("vllm.utils.cpu_triton_utils")
    fallback = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fallback)
    kernels = vllm_cpu_kernels()  # the library vLLM's platform picks for this CPU, never one by name
    if not hasattr(kernels, "expand_kernel_impl"):
        pytest.skip("this vLLM build has no C++ expand kernel")
    temperatures, cu = torch.tensor([0.8, 0.6]), torch.tensor([2, 3], dtype=torch.int32)
    out = torch.full((3,), -7.0)
    fallback._expand_kernel_impl(out, temperatures, cu, 0, 1)  # as expand_batch_to_tokens calls it
    assert out.tolist() == [-7.0, -7.0, -7.0]
    cpu_fix.expand(out, temperatures, cu, 0, 1)
    assert out.tolist() == pytest.approx([0.8, 0.8, 0.6])


def test_the_defect_shows_with_the_kernels_an_avx2_only_cpu_gets() -> None:
    """The same on the kernel library vLLM picks for a CPU without AVX-512, in a process of its own
    (the library a machine of this kind may get instead of this one's)."""
    import subprocess
    import sys

    pytest.importorskip("vllm.utils.cpu_triton_utils")
    code = ("from tests.helpers import vllm_cpu_kernels\nvllm_cpu_kernels(as_avx2_only=True)\n"
            "from tests.unit.engine.test_cpu_fix import test_vllms_cpu_fallback_loses_float_outputs as t\nt()\n"
            "print('shown')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0 and done.stdout.strip().endswith("shown"), done.stderr[-3000:]


def test_it_applies_only_where_it_was_verified() -> None:
    assert cpu_fix.why_not("0.32.0", True, False) is None
    assert cpu_fix.why_not("0.32.0", False, False) == "not the CPU build"
    assert "Triton CPU backend" in cpu_fix.why_not("0.32.0", True, True)
    assert cpu_fix.why_not("0.33.0", True, False).startswith("vLLM 0.33.0 is not a version")


def test_it_is_installed_and_vllm_plugins_can_leave_it_out() -> None:
    assert cpu_fix.active({}) is None
    assert cpu_fix.active({"VLLM_PLUGINS": "llama4spec_cpu_expand,other"}) is None
    assert "leaves its vLLM plugin (llama4spec_cpu_expand) out" in cpu_fix.active({"VLLM_PLUGINS": ""})


def test_the_doctor_refuses_hot_sampling_with_a_draft_without_the_fix() -> None:
    off = {"VLLM_PLUGINS": ""}
    refused = run_cli("doctor", "generation.temperature=0.8", env=off)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "error cpu-sampling: generation.temperature=0.8 with a draft on vLLM's CPU build" in refused.stdout
    assert run_cli("doctor", "bench.temperature=1.0", env=off).returncode == 1
    for fine in (["generation.temperature=0.8"], ["generation.temperature=0.8", "draft=none"],
                 ["generation.temperature=0"]):
        done = run_cli("doctor", *fine, env={} if fine == ["generation.temperature=0.8"] else off)
        assert done.returncode == 0, (fine, done.stdout)


def test_the_doctor_refuses_synthetic_acceptance_without_the_plugin() -> None:
    synthetic = ["lookahead=3", "draft.synthetic_acceptance_length=2.5"]
    refused = run_cli("doctor", *synthetic, env={"VLLM_PLUGINS": ""})
    assert refused.returncode == 1 and "error cpu-sampling: synthetic acceptance" in refused.stdout
    assert run_cli("doctor", *synthetic).returncode == 0


def _launch(impl, cu, draft, uniform, rates, bonus, argmax):
    out = torch.full((len(cu), 4), -1, dtype=torch.int32)
    impl(out, torch.tensor(cu, dtype=torch.int32), torch.tensor(draft, dtype=torch.int32),
         torch.tensor(argmax, dtype=torch.int64), torch.tensor(bonus, dtype=torch.int64), None, 3,
         torch.tensor(uniform, dtype=torch.float64), torch.tensor(rates, dtype=torch.float32), SYNTHETIC_MODE=True)
    return out.tolist()


def test_synthetic_greedy_accepts_below_the_rate_and_stops_at_the_first_rejection() -> None:
    impl = cpu_fix.synthetic_greedy(lambda *a: pytest.fail("the synthetic branch went to vLLM's fallback"))
    # request 0: all three accepted, then the bonus; request 1: position 1 rejected (0.7 >= 0.5): the
    # target's word there and nothing after; request 2: a padded draft token (-1) is never accepted
    out = _launch(impl, [3, 6, 7], [10, 11, 12, 20, 21, 22, -1], [0.1, 0.2, 0.3, 0.1, 0.7, 0.0, 0.0],
                  [1.0, 0.5, 0.9], [99, 98, 97], [50, 51, 52, 60, 61, 62, 70])
    assert out == [[10, 11, 12, 99], [20, 61, -1, -1], [70, -1, -1, -1]]


def test_synthetic_greedy_matches_its_rates_over_many_requests() -> None:
    """Rates from vLLM's own length-to-rates resolution, conditional as its sampler makes them:
    the mean emitted tokens per step is the set acceptance length."""
    sc = pytest.importorskip("vllm.config.speculative").SpeculativeConfig
    cond = pytest.importorskip("vllm.v1.spec_decode.utils").unconditional_to_conditional_rates
    rates = torch.tensor(cond(sc._resolve_synthetic_acceptance_rates(3, None, 2.5)), dtype=torch.float32)
    n = 4000
    gen = torch.Generator().manual_seed(0)
    out = torch.full((n, 4), -1, dtype=torch.int32)
    impl = cpu_fix.synthetic_greedy(None)
    impl(out, torch.arange(3, 3 * n + 1, 3, dtype=torch.int32), torch.full((3 * n,), 5, dtype=torch.int32),
         torch.zeros(3 * n, dtype=torch.int64), torch.ones(n, dtype=torch.int64), None, 3,
         torch.rand(3 * n, generator=gen, dtype=torch.float64), rates, SYNTHETIC_MODE=True)
    emitted = (out >= 0).sum(dim=1).float().mean().item()
    assert emitted == pytest.approx(2.5, abs=0.03)


def test_without_synthetic_mode_vllms_fallback_runs_unchanged() -> None:
    seen = []
    impl = cpu_fix.synthetic_random(lambda *a: seen.append(len(a)))
    impl(*([None] * 11))
    assert seen == [14]
