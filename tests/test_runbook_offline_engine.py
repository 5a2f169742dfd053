"""A runbook `offline` step on a real vLLM (CPU build): its run record lands in the run directory."""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.engine


def test_offline_step_writes_its_record_into_the_run(tmp_path, tiny_dir):
    runbook = tmp_path / "offline_only.yaml"
    runbook.write_text(
        "# llama4spec run offline_only.yaml\n"
        "name: offline_only\n"
        "description: one offline step on the tiny pair\n"
        "overrides: [target=tiny, memory=cpu, lookahead=2]\n"
        "steps:\n"
        "  - id: eagle_offline\n"
        "    kind: offline\n"
        "    overrides: [draft=tiny_eagle, dataset.num_prompts=2, generation.max_tokens=32]\n"
    )
    runs = tmp_path / "runs"
    res = run_cli("run", str(runbook), "--runs-dir", str(runs), timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (run_dir,) = [d for d in runs.glob("offline_only/*") if d.is_dir()]
    summary = json.loads((run_dir / "status.json").read_text())
    assert summary["status"] == "done" and summary["steps"][0]["status"] == "done"
    record_path = run_dir / "eagle_offline" / "record.json"
    stats = json.loads(record_path.read_text())["stats"]
    assert stats["total_num_output_tokens"] == 2 * 32
    stats = stats["acceptance"]
    drafts = stats["num_drafts"]
    assert drafts > 0 and stats["num_draft_tokens"] == 2 * drafts
    # The perfect pair accepts every draft; a request's last step may be cut short at max_tokens,
    # so allow one step per prompt (2 prompts) at the end of the sequences.
    assert stats["num_accepted_tokens"] >= stats["num_draft_tokens"] - 2 * 2
    assert all(rate >= 1 - 2 / drafts for rate in stats["acceptance_rate_per_position"])
    assert len(stats["acceptance_rate_per_position"]) == 2
    assert "acceptance by draft position" in res.stdout
