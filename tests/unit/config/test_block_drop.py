"""``draft.disable_eagle_block_drop``: vLLM's speculative-config key, for the EAGLE-family methods only."""

from __future__ import annotations

import json

import pytest

from llama4spec.config import methods
from llama4spec.config.compose import compose_config
from llama4spec.config.validate import validate
from llama4spec.engine.args import serve_flags, speculative_config


@pytest.mark.parametrize("value", [True, False])
def test_eagle_passes_it_to_vllm(value):
    cfg = compose_config(["draft=tiny_eagle", f"draft.disable_eagle_block_drop={str(value).lower()}"]).cfg
    assert validate(cfg) == []
    assert speculative_config(cfg)["disable_eagle_block_drop"] is value
    flags = serve_flags(cfg)
    assert json.loads(flags[flags.index("--speculative-config") + 1])["disable_eagle_block_drop"] is value


def test_left_unset_it_is_vllms_default():
    assert "disable_eagle_block_drop" not in speculative_config(compose_config(["draft=tiny_eagle"]).cfg)


def test_the_family_is_vllms_use_eagle():
    assert {m.name for m in methods.TABLE if m.eagle_family} == {"eagle", "eagle3", "mtp", "dflash", "dspark"}


@pytest.mark.parametrize("draft", ["ngram", "suffix", "tiny_draft_model", "none"])
def test_another_method_is_refused_in_one_line(draft):
    problems = validate(compose_config([f"draft={draft}", "draft.disable_eagle_block_drop=true"]).cfg)
    assert len(problems) == 1 and problems[0].startswith("draft.disable_eagle_block_drop=true: it applies to")
    assert "eagle, eagle3, mtp, dflash, dspark" in problems[0]


def test_validate_exits_2_with_one_line(cli):
    result = cli("validate", "draft=ngram", "draft.disable_eagle_block_drop=true")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stdout + result.stderr
    assert len(lines) == 1 and "draft.disable_eagle_block_drop=true" in lines[0], lines
