"""``python -m llama4spec.serving.vllm_bench FLAGS`` is ``vllm bench serve FLAGS`` through vLLM's
Python API, for builds whose ``vllm`` console script does not start (the CPU wheel).

``python -m llama4spec.serving.vllm_bench --worker`` imports vLLM's benchmark once (about 10 s
here) and then runs one ``vllm bench serve`` per request line on stdin, ``{"argv": FLAGS, "log":
PATH}``: that run's output is appended to PATH and its exit code is answered on stdout as
``{"code": N, "cpu_s": S}`` (S: the CPU time, user and system, the run took in this process: the
load generator's own cost). It ends at the end of stdin. ``serving.bench_runner`` is its one user.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Callable

WORKER_FLAG = "--worker"


def _load() -> Callable[[list[str]], object]:
    import vllm.platforms  # noqa: F401  (select the platform before the benchmark imports kernels)
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    def bench(argv: list[str]) -> object:
        parser = FlexibleArgumentParser(prog="vllm bench serve")
        add_cli_args(parser)
        return bench_main(parser.parse_args(argv))

    return bench


def _exit_code(bench: Callable[[list[str]], object], argv: list[str]) -> int:
    """What ``vllm bench serve ARGV`` would exit with, as one process of its own would."""
    try:
        bench(argv)
        return 0
    except SystemExit as e:  # argparse (2) or the benchmark's own exits
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except Exception:  # noqa: BLE001  (as an uncaught exception would end a process: traceback, code 1)
        traceback.print_exc()
        return 1


def _flush() -> None:
    sys.stdout.flush()
    sys.stderr.flush()


def serve_requests() -> int:
    """The worker loop (``--worker``)."""
    replies = os.fdopen(os.dup(1), "w", buffering=1)  # stdout is the reply pipe; runs write to their logs
    quiet, own_errors = os.open(os.devnull, os.O_WRONLY), os.dup(2)  # between runs: the worker's own stderr
    os.dup2(quiet, 1)
    bench = _load()
    while True:
        line = sys.stdin.readline()
        if not line:
            return 0
        request = json.loads(line)
        with open(request["log"], "ab") as log:
            _flush()
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            cpu = time.process_time()
            try:
                code = _exit_code(bench, list(request["argv"]))
            finally:
                cpu = time.process_time() - cpu
                _flush()
                os.dup2(quiet, 1)
                os.dup2(own_errors, 2)
        replies.write(json.dumps({"code": code, "cpu_s": round(cpu, 6)}) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == [WORKER_FLAG]:
        return serve_requests()
    _load()(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
