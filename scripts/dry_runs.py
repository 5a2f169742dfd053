"""Every shipped runbook's dry run and plan.json, for comparing two checkouts byte for byte.

    .venv/bin/python scripts/dry_runs.py OUT        (then: diff -r OUT_BEFORE OUT_AFTER)

For each runbooks/*.yaml and each vLLM build (the CPU build's argv and the GPU build's `vllm` CLI)
it writes OUT/<runbook>.<build>.dry_run.txt (the dry run as `llama4spec run --dry-run` prints it, 100
columns) and OUT/<runbook>.<build>.plan.json (what the recorder writes as plan.json), with the run
directory fixed at runs/RUNBOOK/TIMESTAMP and this machine's paths masked as tests/golden does (the
tiny models' root as <tiny>, the interpreter as <python>, the checkout as nothing). It prints how
many files and bytes it wrote.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from rich.console import Console

from llama4spec.engine import build
from llama4spec.runbook.plan import plan_file
from llama4spec.runbook.render import plan_text
from llama4spec.tiny.paths import tiny_root

REPO = Path(__file__).resolve().parent.parent
RUN_DIR = Path("runs/RUNBOOK/TIMESTAMP")


def _masked(text: str) -> str:
    return text.replace(str(tiny_root()), "<tiny>").replace(sys.executable, "<python>").replace(str(REPO) + "/", "")


def _write(out: Path, runbook: Path, which: str) -> int:
    build.vllm_cli = lambda: which == "gpu"  # the build this plan is for (as tests/unit/conftest.use_build)
    plan = plan_file(runbook, lambda name: RUN_DIR)
    console = Console(record=True, width=100, file=io.StringIO())
    plan_text(console, plan)
    texts = {"dry_run.txt": console.export_text(),
             "plan.json": json.dumps(plan.to_record(set()), indent=2, sort_keys=True) + "\n"}
    size = 0
    for suffix, text in texts.items():
        data = _masked(text).encode()
        (out / f"{runbook.stem}.{which}.{suffix}").write_bytes(data)
        size += len(data)
    return size


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    runbooks = sorted((REPO / "runbooks").glob("*.yaml"))
    size = sum(_write(out, runbook, which) for runbook in runbooks for which in ("cpu", "gpu"))
    print(f"{len(runbooks)} runbooks x 2 builds: {4 * len(runbooks)} files, {size:,} bytes in {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
