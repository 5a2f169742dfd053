"""Synthetic acceptance as draft settings (``config.synthetic``): what reaches vLLM's speculative
config, and the one-line refusals made before anything starts (vLLM's own rules, checked first)."""

from __future__ import annotations

import pytest

from llama4spec.config.compose import compose_config
from llama4spec.config.validate import validate
from llama4spec.engine.args import speculative_config
from tests.helpers import run_cli


def _cfg(*overrides: str):
    return compose_config(list(overrides)).cfg


def test_a_length_reaches_the_speculative_config() -> None:
    spec = speculative_config(_cfg("draft=tiny_eagle", "lookahead=3", "draft.synthetic_acceptance_length=2.5"))
    assert spec["rejection_sample_method"] == "synthetic" and spec["synthetic_acceptance_length"] == 2.5
    assert "synthetic_acceptance_rates" not in spec


def test_rates_reach_the_speculative_config_and_nothing_without_them() -> None:
    spec = speculative_config(_cfg("draft=tiny_eagle", "lookahead=2", "draft.synthetic_acceptance_rates=[0.9,0.5]"))
    assert spec["synthetic_acceptance_rates"] == [0.9, 0.5] and spec["rejection_sample_method"] == "synthetic"
    assert "rejection_sample_method" not in speculative_config(_cfg("draft=tiny_eagle"))


def test_vllm_accepts_what_the_checks_accept() -> None:
    """vLLM's own resolution of the same settings (its static methods, no engine)."""
    sc = pytest.importorskip("vllm.config.speculative").SpeculativeConfig
    assert sc._resolve_synthetic_acceptance_rates(3, None, 2.5) == [1.0, 0.5, 0.0]
    for length in (0.5, 4.5):
        with pytest.raises(ValueError):
            sc._resolve_synthetic_acceptance_rates(3, None, length)
        assert validate(_cfg("draft=tiny_eagle", "lookahead=3", f"draft.synthetic_acceptance_length={length}"))


@pytest.mark.parametrize("overrides, expected", [
    (["lookahead=3", "draft.synthetic_acceptance_length=4.5"], "must be in [1, lookahead + 1] = [1, 4]"),
    (["lookahead=3", "draft.synthetic_acceptance_length=0.9"], "must be in [1, lookahead + 1] = [1, 4]"),
    (["lookahead=3", "draft.synthetic_acceptance_rates=[0.5,0.6,0.1]"], "the rates rise with position"),
    (["lookahead=2", "draft.synthetic_acceptance_rates=[0.5,1.2]"], "each rate must be in [0, 1]"),
    (["lookahead=2", "draft.synthetic_acceptance_rates=[0.5,-0.1]"], "each rate must be in [0, 1]"),
    (["lookahead=3", "draft.synthetic_acceptance_rates=[0.5]"], "give lookahead (3) rates"),
    (["lookahead=2", "draft.synthetic_acceptance_rates=[0.5,0.2]", "draft.synthetic_acceptance_length=2"],
     "both set; give one of them"),
    (["draft=none", "draft.synthetic_acceptance_length=1.5"], "name a draft"),
])
def test_bad_settings_are_refused_in_one_line(overrides, expected) -> None:
    found = validate(_cfg("draft=tiny_eagle", *overrides))
    assert len(found) == 1 and expected in found[0], found


def test_the_command_line_refuses_before_anything_starts() -> None:
    out = run_cli("serve", "--dry-run", "draft=tiny_eagle", "lookahead=3", "draft.synthetic_acceptance_length=5")
    assert out.returncode == 2, out.stderr
    lines = [line for line in (out.stdout + out.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "synthetic_acceptance_length=5" in lines[0] and "Traceback" not in out.stderr
