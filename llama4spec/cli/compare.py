"""``compare``: EAGLE vs baseline from two saved benchmark results."""

from __future__ import annotations

import argparse
from pathlib import Path

from llama4spec.cli.common import Command, out
from llama4spec.cli.jsonout import emit


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("baseline", type=Path, help="the baseline result (llama4spec record or vllm bench serve JSON)")
    p.add_argument("candidate", type=Path, help="the speculative result, compared against the baseline")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="print a Markdown table instead")
    fmt.add_argument("--json", action="store_true", help="print the comparison as one JSON document (schema "
                     "llama4spec.compare/1): metrics, speedup per metric, acceptance; for CI gates")


def _run(args: argparse.Namespace) -> int:
    from llama4spec.results import comparison as compare

    from llama4spec.analysis.pair_headline import headline

    base, cand = compare.load_pair(args.baseline, args.candidate)
    line = headline(base.samples("output_throughput"), cand.samples("output_throughput"), None,
                    base.sample_starts("output_throughput"), cand.sample_starts("output_throughput"))
    if args.json:
        emit({**compare.document(base, cand, args.baseline, args.candidate), "headline": line})
    elif args.markdown:
        out.print(f"{line}\n\n{compare.markdown(base, cand)}", markup=False, highlight=False, soft_wrap=True)
    else:
        out.print(line, markup=False, highlight=False, soft_wrap=True)
        compare.render(out, base, cand)
    return 0


COMMANDS = [Command("compare", "EAGLE vs baseline table from two saved benchmark JSONs", _arguments, _run,
                    examples=["llama4spec compare runs/RUN/bench_baseline/record.json runs/RUN/bench_eagle/record.json",
                              "llama4spec compare BASELINE.json CANDIDATE.json --json"])]
