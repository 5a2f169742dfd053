"""Shell completion through argcomplete: commands, config groups and options, keys. Driven both through
the completer function and through argcomplete's own protocol (_ARGCOMPLETE, COMP_LINE, COMP_POINT)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llama4spec.cli.complete import config_keys, override_completions
from tests.helpers import REPO

WORDBREAKS = " \t\n\"'><=;|&(:"


def complete(line: str, tmp_path: Path, wordbreaks: str | None = None) -> list[str]:
    """What argcomplete answers for ``line`` (cursor at its end), as bash's completion function asks."""
    out = tmp_path / "completions"
    env = dict(os.environ, _ARGCOMPLETE="1", _ARGCOMPLETE_IFS="\n", COMP_LINE=line, COMP_POINT=str(len(line)),
               _ARGCOMPLETE_STDOUT_FILENAME=str(out), _ARGCOMPLETE_SHELL="bash")
    if wordbreaks is not None:
        env["_ARGCOMPLETE_COMP_WORDBREAKS"] = wordbreaks
    done = subprocess.run([sys.executable, "-m", "llama4spec"], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # completions go to the protocol's channel, never to stdout
    return [w.strip() for w in out.read_text().split("\n") if w.strip()]


def test_keys_come_from_the_schema() -> None:
    keys = config_keys()
    assert {"lookahead", "draft.model", "memory.max_num_seqs", "bench.max_concurrency", "serve.port"} <= set(keys)
    assert keys["memory.enforce_eager"] == "bool"


def test_completer_function() -> None:
    assert override_completions("dra") == sorted(["draft="] + [f"{k}=" for k in config_keys() if k.startswith("dra")])
    assert override_completions("draft=tiny") == ["draft=tiny_draft_model", "draft=tiny_draft_model_imperfect",
                                                  "draft=tiny_eagle", "draft=tiny_eagle3", "draft=tiny_eagle3_imperfect",
                                                  "draft=tiny_eagle_contrast", "draft=tiny_eagle_imperfect",
                                                  "draft=tiny_eagle_imperfect_keep_block",
                                                  "draft=tiny_eagle_spread"]
    assert "target=llama4_scout" in override_completions("target=")
    assert override_completions("look") == ["lookahead="]
    assert override_completions("memory.enforce_eager=") == ["memory.enforce_eager=true", "memory.enforce_eager=false"]
    assert override_completions("lookahead=") == []
    assert "experiment=null" in override_completions("experiment=")


def test_completer_sees_a_searchpath_on_the_line(tmp_path: Path) -> None:
    (tmp_path / "draft").mkdir()
    (tmp_path / "draft" / "my_head.yaml").write_text("name: my_head\nmethod: eagle\nmodel: /x\n")
    typed = [f"hydra.searchpath=[file://{tmp_path}]"]
    assert override_completions("draft=my", typed) == ["draft=my_head"]


@pytest.mark.parametrize("line,expected", [
    ("llama4spec sh", ["show"]),
    ("llama4spec sw", ["sweep"]),
    ("llama4spec compare a.json b.json --j", ["--json"]),
    ("llama4spec show memory.enf", ["memory.enforce_eager="]),
    ("llama4spec sweep look", ["lookahead="]),
    ("llama4spec sweep lookahead=1,3 --dry-run bench=random_t", ["bench=random_tiny"]),  # overrides after an option
    ("llama4spec offline draft=none -q looka", ["lookahead="]),
    ("llama4spec doctor draft=tiny", ["draft=tiny_draft_model", "draft=tiny_draft_model_imperfect", "draft=tiny_eagle", "draft=tiny_eagle3", "draft=tiny_eagle3_imperfect", "draft=tiny_eagle_contrast", "draft=tiny_eagle_imperfect", "draft=tiny_eagle_imperfect_keep_block", "draft=tiny_eagle_spread"]),
])
def test_argcomplete_protocol(line: str, expected: list[str], tmp_path: Path) -> None:
    assert complete(line, tmp_path) == expected


def test_argcomplete_protocol_with_bash_wordbreaks(tmp_path: Path) -> None:
    """bash splits words at '=': argcomplete answers the part after it."""
    assert complete("llama4spec show draft=tin", tmp_path, WORDBREAKS) == ["tiny_draft_model", "tiny_draft_model_imperfect", "tiny_eagle", "tiny_eagle3", "tiny_eagle3_imperfect", "tiny_eagle_contrast", "tiny_eagle_imperfect", "tiny_eagle_imperfect_keep_block", "tiny_eagle_spread"]


def test_normal_runs_do_not_import_argcomplete() -> None:
    code = ("import sys; from llama4spec.cli.main import main; rc = main(['show', '--json']); "
            "assert 'argcomplete' not in sys.modules, 'argcomplete imported'; "
            "assert 'llama4spec.cli.complete' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "_ARGCOMPLETE"})
    assert done.returncode == 0, done.stderr
