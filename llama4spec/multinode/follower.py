"""A headless vLLM follower: ``vllm serve``'s own code path, started as a Python module.

    python -m llama4spec.multinode.follower --model M ... --node-rank 1 --headless

The CPU build's ``vllm`` console script cannot start (it looks up a distribution named vllm and
imports AVX-512 kernels before choosing the platform), and the API server module ignores
``--headless``. This parses the same flags as ``vllm serve`` and runs its command, after
choosing the platform.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> None:
    import vllm.platforms  # noqa: F401  (select the platform before the CLI's kernel imports)
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    args = parser.parse_args(argv)
    ServeSubcommand().validate(args)
    ServeSubcommand.cmd(args)


if __name__ == "__main__":
    main(sys.argv[1:])
