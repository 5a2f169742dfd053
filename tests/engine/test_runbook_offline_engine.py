"""A runbook `offline` step on a real vLLM (CPU build): its run record lands in the run directory.
The step is the shared perfect-pair run (tests/engine/conftest.py: ``perfect_offline``)."""

from __future__ import annotations

import json

import pytest

from tests.engine.conftest import K, OFFLINE_TOKENS, PERFECT_PROMPTS

pytestmark = pytest.mark.engine


def test_offline_step_writes_its_record_into_the_run(perfect_offline):
    run_dir = perfect_offline.run_dir
    summary = json.loads((run_dir / "status.json").read_text())
    assert summary["status"] == "done" and summary["steps"][0]["status"] == "done"
    assert (run_dir / "perfect" / "config.yaml").is_file()
    stats = json.loads((run_dir / "perfect" / "record.json").read_text())["stats"]
    assert stats == perfect_offline.record["stats"]
    assert stats["total_num_output_tokens"] == PERFECT_PROMPTS * OFFLINE_TOKENS
    stats = stats["acceptance"]
    drafts = stats["num_drafts"]
    assert drafts > 0 and stats["num_draft_tokens"] == K * drafts
    # The perfect pair accepts every draft (tests/engine/test_offline_engine.py checks the exact
    # counters against the simulation); here: what the step recorded is what vLLM counted.
    assert stats["num_accepted_tokens"] == sum(stats["accepted_per_pos"])
    assert len(stats["acceptance_rate_per_position"]) == K
    assert summary["steps"][0]["result"]["speedup"] == perfect_offline.record.get("speedup")
    assert "acceptance by draft position" in perfect_offline.stdout
