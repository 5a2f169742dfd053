"""Prompt sources (pure)."""

from __future__ import annotations

import pytest

from llama4spec.config.schema import DatasetConfig
from llama4spec.errors import UserError
from llama4spec.offline.prompts import builtin_prompts, load_jsonl, load_prompts


def test_builtin_prompts_are_repetitive_word_chains():
    prompts = builtin_prompts(6)
    assert len(prompts) == 6 and len(set(prompts)) == 6
    words = prompts[0].split()
    assert words[-3:] == words[:3]


def test_jsonl_reads_prompts_and_limits(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "a"}\n\n{"prompt": "b"}\n{"prompt": "c"}\n')
    assert load_jsonl(f, 2) == ["a", "b"]
    p = load_prompts(DatasetConfig(name="jsonl", path=str(f), num_prompts=10))
    assert p.texts == ["a", "b", "c"] and p.source["kind"] == "jsonl"


@pytest.mark.parametrize(
    "content,expected",
    [
        ('{"prompt": "a"}\n{"prompt": oops}\n', ":2: not valid JSON"),
        ('{"prompt": "a"}\n{"text": "b"}\n', ':2: expected an object with a string "prompt" field'),
        ("\n\n", "no prompts found"),
    ],
)
def test_jsonl_bad_lines_name_their_line(tmp_path, content, expected):
    f = tmp_path / "bad.jsonl"
    f.write_text(content)
    with pytest.raises(UserError) as info:
        load_jsonl(f, 10)
    assert expected in str(info.value)


def test_mtbench_without_hub_or_cache_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(UserError) as info:
        load_prompts(DatasetConfig(name="mtbench", path="philschmid/mt-bench", num_prompts=1))
    assert "not in the local cache" in str(info.value) and "dataset=jsonl" in str(info.value)
