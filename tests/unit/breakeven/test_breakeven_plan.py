"""Breakeven steps without an engine: expansion into servers (no speculation, synthetic acceptance at
each grid length, the draft itself) and bench runs, the Scout runbook's exact serve lines under vLLM's
own parser, the report from recorded runs, and bad input (one line, exit 2, nothing started)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama4spec.errors import UserError
from llama4spec.breakeven.kind import lengths
from llama4spec.runbook.plan import plan_file
from tests.helpers import REPO, run_cli

RUN_DIR = Path("runs/RUNBOOK/TIMESTAMP")
TINY = REPO / "runbooks" / "tiny_cpu_breakeven.yaml"
SCOUT = REPO / "runbooks" / "llama4_scout_eagle_breakeven.yaml"


def _plan(path: Path, *overrides: str):
    return plan_file(path, lambda name: RUN_DIR, list(overrides))


def _spec(argv: list[str]) -> dict | None:
    return json.loads(argv[argv.index("--speculative-config") + 1]) if "--speculative-config" in argv else None


def test_the_grid_runs_from_every_token_rejected_to_all_accepted() -> None:
    assert lengths(3, 4) == [1.0, 2.0, 3.0, 4.0]
    assert lengths(1, 4) == [1.0, 1.333, 1.667, 2.0]
    assert lengths(5, 5) == [1.0, 2.25, 3.5, 4.75, 6.0]


def test_tiny_breakeven_expands_to_a_server_per_length_and_lookahead_and_the_draft() -> None:
    plan = _plan(TINY)
    serves = [p for p in plan.steps if p.kind == "serve"]
    assert [p.id for p in serves] == ["breakeven-none", "breakeven-k1-L1", "breakeven-k1-L1_333", "breakeven-k1-L1_667",
                                      "breakeven-k1-L2", "breakeven-k1-draft", "breakeven-k3-L1", "breakeven-k3-L2",
                                      "breakeven-k3-L3", "breakeven-k3-L4", "breakeven-k3-draft"]
    specs = [_spec(p.argv) for p in serves]
    assert specs[0] is None
    synthetic = [(s["num_speculative_tokens"], s["synthetic_acceptance_length"]) for s in specs[1:] if
                 s.get("rejection_sample_method") == "synthetic"]
    assert synthetic == [(1, 1.0), (1, 1.333), (1, 1.667), (1, 2.0), (3, 1.0), (3, 2.0), (3, 3.0), (3, 4.0)]
    drafts = [s for s in specs[1:] if "rejection_sample_method" not in s]
    assert [s["num_speculative_tokens"] for s in drafts] == [1, 3]
    assert all(s["model"].endswith("draft_imperfect") for s in specs[1:])  # the same draft proposes everywhere
    benches = [p for p in plan.steps if p.kind == "bench"]
    assert len(benches) == 22 and {b.argv[b.argv.index("--max-concurrency") + 1] for b in benches} == {"1", "4"}
    last = plan.steps[-1]
    assert last.kind == "breakeven" and set(last.step.needs) == {b.id for b in benches}
    assert {k: v.name for k, v in last.artifacts.items()} == {"report": "breakeven.md", "analysis": "breakeven.json",
                                                              "plot": "breakeven.png"}


def test_the_scout_serve_lines_parse_under_vllms_own_parser(use_build) -> None:
    """`vllm serve` as vLLM 0.32 builds its parser (``entrypoints/cli/serve.py``), and the synthetic
    settings through vLLM's own resolution."""
    pytest.importorskip("vllm")
    from vllm.config.speculative import SpeculativeConfig
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    use_build("gpu")
    plan = _plan(SCOUT)
    top = FlexibleArgumentParser()
    ServeSubcommand().subparser_init(top.add_subparsers())
    serves = [p for p in plan.steps if p.kind == "serve"]
    assert len(serves) == 1 + 3 * (5 + 1)
    seen = set()
    for p in serves:
        assert p.argv[:2] == ["vllm", "serve"]
        args = top.parse_args(p.argv[1:])
        assert args.model_tag == "meta-llama/Llama-4-Scout-17B-16E-Instruct" and args.tensor_parallel_size == 4
        spec = args.speculative_config
        if spec and spec.get("rejection_sample_method") == "synthetic":
            k, length = spec["num_speculative_tokens"], spec["synthetic_acceptance_length"]
            rates = SpeculativeConfig._resolve_synthetic_acceptance_rates(k, None, length)
            assert sum(rates) == pytest.approx(length - 1) and len(rates) == k
            seen.add((k, length))
    assert seen == {(k, x) for k in (1, 3, 5) for x in lengths(k, 5)}
    benches = [p for p in plan.steps if p.kind == "bench"]
    assert {b.argv[b.argv.index("--max-concurrency") + 1] for b in benches} == {"1", "16", "64"}
    assert all(b.argv[b.argv.index("--dataset-path") + 1] == "philschmid/mt-bench" for b in benches)


@pytest.mark.parametrize("keys, expected", [
    ("    lookaheads: [1, 3]\n", "needs 'concurrencies'"),
    ("    lookaheads: [0]\n    concurrencies: [1]\n", "'lookaheads' must be a list"),
    ("    lookaheads: [1]\n    concurrencies: [1]\n    grid: 1\n", "grid"),
])
def test_bad_keys_are_one_line_each(tmp_path: Path, keys: str, expected: str) -> None:
    path = tmp_path / "rb.yaml"
    path.write_text("name: rb\noverrides: [target=tiny, memory=cpu]\nsteps:\n  - id: be\n    kind: breakeven\n" + keys)
    with pytest.raises(UserError) as err:
        _plan(path)
    assert any(expected in p for p in err.value.problems), err.value.problems


def test_a_map_without_a_draft_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rb.yaml"
    path.write_text("name: rb\noverrides: [target=tiny, memory=cpu, draft=none]\nsteps:\n  - id: be\n"
                    "    kind: breakeven\n    lookaheads: [1]\n    concurrencies: [1]\n")
    with pytest.raises(UserError) as err:
        _plan(path)
    assert any("name the draft" in p for p in err.value.problems)


def test_the_command_refuses_in_one_line_and_plans_the_same_steps() -> None:
    bad = run_cli("breakeven", "target=tiny", "memory=cpu", "--lookaheads", "1,3", "--dry-run")
    assert bad.returncode == 2 and "--concurrencies" in bad.stderr and "Traceback" not in bad.stderr
    good = run_cli("breakeven", "draft=tiny_eagle_imperfect", "target=tiny", "memory=cpu", "--lookaheads", "1,3",
                   "--concurrencies", "1,4", "--dry-run")
    assert good.returncode == 0, good.stderr
    assert "[45/45] breakeven: breakeven" in good.stdout and "synthetic_acceptance_length" in good.stdout
