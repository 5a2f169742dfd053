"""runbooks/tiny_cpu_prefix_cache.yaml planned without an engine: every server's prefix caching as
its argv has it and as the dry run says it, the block-drop-off arm's speculative config, the
shared-prefix benchmark, and the lossless check on the block-drop-off arm."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.render import plan_text
from tests.helpers import REPO

RUNBOOK = REPO / "runbooks" / "tiny_cpu_prefix_cache.yaml"


def _plan():
    return plan_file(RUNBOOK, lambda name: Path("runs/RUNBOOK/TIMESTAMP"), [])


def _spec(argv: list[str]) -> dict:
    return json.loads(argv[argv.index("--speculative-config") + 1]) if "--speculative-config" in argv else {}


def test_each_server_has_the_prefix_caching_its_sweep_asks_for() -> None:
    servers = [p for p in _plan().steps if p.kind == "serve"]
    cached = [p for p in servers if p.id.startswith("cached")]
    uncached = [p for p in servers if p.id.startswith("uncached")]
    assert len(cached) == 12 and len(uncached) == 6  # 2 candidates x 3 blocks x 2 servers; 1 x 3 x 2
    assert not any("--no-enable-prefix-caching" in p.argv or "--enable-prefix-caching" in p.argv for p in cached)
    assert all("--no-enable-prefix-caching" in p.argv for p in uncached)
    kept = [p for p in servers if _spec(p.argv).get("disable_eagle_block_drop")]
    assert kept and all("tiny_eagle_imperfect_keep_block" in p.id and p.id.startswith("cached") for p in kept)
    dropped = [p for p in cached if _spec(p.argv) and p not in kept]
    assert dropped and all("disable_eagle_block_drop" not in _spec(p.argv) for p in dropped)
    assert {_spec(p.argv)["num_speculative_tokens"] for p in kept + dropped} == {2}


def test_the_dry_run_says_each_servers_prefix_caching() -> None:
    plan = _plan()
    console = Console(record=True, width=100, file=io.StringIO())
    plan_text(console, plan)
    text = console.export_text()
    said = [line.strip() for line in text.splitlines() if line.strip().startswith("prefix caching:")]
    assert len(said) == sum(p.kind == "serve" for p in plan.steps) == 18
    assert said.count("prefix caching: on (vLLM's default)") == 6  # no speculation, cached blocks
    assert said.count("prefix caching: off (serve.enable_prefix_caching=false)") == 6
    assert said.count("prefix caching: on (vLLM's default), last block of each hit kept "
                      "(draft.disable_eagle_block_drop=true)") == 3
    assert said.count("prefix caching: on (vLLM's default), last block of each hit dropped under EAGLE "
                      "(vLLM's default)") == 3


def test_the_benchmark_is_shared_prefixes_and_the_lossless_check_is_the_block_drop_off_arm() -> None:
    plan = _plan()
    benches = [p for p in plan.steps if p.kind == "bench"]
    assert benches and all(p.argv[p.argv.index("--dataset-name") + 1] == "prefix_repetition" for p in benches)
    assert all(p.argv[p.argv.index("--num-prompts") + 1] == "16" for p in benches)
    check = plan.get("lossless")
    assert check.composed.cfg.draft.disable_eagle_block_drop is True
    assert check.composed.cfg.serve.enable_prefix_caching is None  # vLLM's default: on
    prompts = [json.loads(line)["prompt"].split() for line in Path(check.composed.cfg.dataset.path).read_text().splitlines()]
    assert len(prompts) == 8 and all(p[:300] == prompts[0][:300] and p[300:] != prompts[0][300:] for p in prompts[1:])
