"""A setting's name names every key its sweep varies: a sweep over ``memory.max_num_seqs: [128, 127]``
(draft and lookahead fixed) reports two settings by two names, in the tables, the verdicts, the
plots' series and the CSV."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from llama4spec.results.bench import BenchRecord
from llama4spec.analysis.points import points, varied_keys
from tests.recorded_runs import finished_run

BOOK = """\
name: seqs
env:
  VLLM_CPU_KVCACHE_SPACE: "1"
overrides: [target=tiny, memory=cpu, bench=random_tiny, bench.num_prompts=16, serve.port=8741]
steps:
  - id: sweep
    kind: sweep
    matrix:
      draft: [none, tiny_eagle]
      lookahead: [2]
      memory.max_num_seqs: [128, 127]
    repeats: 3
"""


def test_the_keys_a_sweep_varies_are_those_not_named_already() -> None:
    configs = [{"draft": {"name": d, "method": None if d == "none" else "eagle"}, "lookahead": 2, "memory": {"max_num_seqs": n}, "serve": {"port": 1}}
               for d in ("none", "x") for n in (128, 127)]
    assert varied_keys(configs) == ["memory.max_num_seqs"]
    # where each server group ran (its own port and hosts in a parallel or Slurm run) names no setting
    placed = [{**c, "serve": {"port": 8000 + i, "host": f"10.0.0.{i}"}, "cluster": {"hosts": [f"h{i}"]}}
              for i, c in enumerate(configs)]
    assert varied_keys(placed) == ["memory.max_num_seqs"]
    record = BenchRecord(label="p", returncode=0, result={"completed": 4, "output_throughput": 10.0})
    named = points((f"p{i}", c, record) for i, c in enumerate(configs))
    assert len({p.name for p in named}) == 4
    assert named[1].name == "no speculation memory.max_num_seqs=127"


def test_two_settings_are_two_names_in_every_output(tmp_path: Path) -> None:
    book = tmp_path / "seqs.yaml"
    book.write_text(BOOK)
    run = finished_run(tmp_path / "run", runbook=book, repeats=3)
    report = (run / "sweep" / "report.md").read_text()
    for n in (128, 127):
        assert f"tiny_eagle k=2 memory.max_num_seqs={n}" in report, report
    rows = list(csv.DictReader(io.StringIO((run / "sweep" / "sweep.csv").read_text(), newline="")))
    assert len({r["setting"] for r in rows}) == 4, {r["setting"] for r in rows}
    analysis = json.loads((run / "sweep" / "sweep.json").read_text())
    text = json.dumps(analysis)
    assert "memory.max_num_seqs=127" in text and "memory.max_num_seqs=128" in text
