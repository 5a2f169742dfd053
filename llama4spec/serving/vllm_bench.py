"""``python -m llama4spec.serving.vllm_bench FLAGS`` is ``vllm bench serve FLAGS`` through vLLM's
Python API, for builds whose ``vllm`` console script does not start (the CPU wheel)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    import vllm.platforms  # noqa: F401  (select the platform before the benchmark imports kernels)
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    bench_main(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
