"""``llama4spec offline`` refuses bad input before it starts an engine (no engine here: each
command ends at the check), with one readable line and exit 2."""

from __future__ import annotations

import json

from tests.helpers import run_cli


def test_bad_jsonl_line_fails_before_engine_start(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "w1"}\nnot json\n')
    result = run_cli("offline", "dataset=jsonl", f"dataset.path={bad}", timeout=120)
    assert result.returncode == 2
    assert f"{bad}:2: not valid JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_model_directory_fails_before_engine_start(tmp_path):
    result = run_cli("offline", f"target.model={tmp_path / 'nope'}", timeout=120)
    assert result.returncode == 2
    assert "does not exist" in result.stderr and "Traceback" not in result.stderr


def test_draft_config_without_yoco_keys_fails_before_engine_start(tiny_dir, tmp_path):
    import shutil

    broken = tmp_path / "draft_no_yoco"
    shutil.copytree(tiny_dir / "draft", broken)
    cfg = json.loads((broken / "config.json").read_text())
    del cfg["yoco_global_kv_layer"], cfg["yoco_local_kv_layer"]
    (broken / "config.json").write_text(json.dumps(cfg))
    result = run_cli("offline", f"draft.model={broken}", timeout=120)
    assert result.returncode == 2
    assert "yoco" in result.stderr and "Traceback" not in result.stderr


