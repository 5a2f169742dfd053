"""``python -m llama4spec.serving.vllm_bench FLAGS`` is ``vllm bench serve FLAGS`` through vLLM's
Python API, for builds whose ``vllm`` console script does not start (the CPU wheel).

``python -m llama4spec.serving.vllm_bench --worker`` imports vLLM's benchmark once (about 10 s
here) and then runs one ``vllm bench serve`` per request line on stdin, ``{"argv": FLAGS, "log":
PATH}``: that run's output is appended to PATH and its exit code is answered on stdout as
``{"code": N, "cpu_s": S}`` (S: the CPU time, user and system, the run took in this process: the
load generator's own cost). It ends at the end of stdin. ``serving.bench_runner`` is its one user.

Per-request acceptance: vLLM's server returns ``metrics.speculative_decoding`` on a streamed
request's final usage chunk (``--per-request-spec-decode-metrics``), but vLLM's request functions
keep only ``usage``. Before vLLM parses its arguments, ``register`` adds a request function of our
own (``OWN_BACKEND``): vLLM's OpenAI completions function, given a session whose responses also
feed every streamed message to us, so the block is kept, keyed by request id. ``--backend openai``
runs as ``OWN_BACKEND``, and after the benchmark every request (its id, timings, output tokens, the
block) is written beside the result as ``<result>.requests.json`` (``requests_path``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import traceback
import uuid
from pathlib import Path
from typing import Any, Callable

WORKER_FLAG = "--worker"
OWN_BACKEND = "llama4spec-openai"  # vLLM's "openai" completions, keeping each request's speculative metrics
REQUESTS_SUFFIX = ".requests.json"
ID_PREFIX = "llama4spec-"  # --request-id-prefix when none is given, with a word unique to the run


def requests_path(result: Path) -> Path:
    """Where the per-request table of the run whose result is ``result`` is written."""
    return result.with_name(result.stem + REQUESTS_SUFFIX)


def own_argv(argv: list[str], run: str) -> list[str]:
    """``argv`` as this module runs it: ``--backend openai`` (or none) becomes ``OWN_BACKEND``, and
    request ids are ``ID_PREFIX``, ``run`` and their index (``llama4spec-RUN-0``, ...) unless a prefix
    is given."""
    out, i, backend = [], 0, False
    while i < len(argv):
        word = argv[i]
        if word == "--backend" and i + 1 < len(argv):
            backend = True
            out += [word, OWN_BACKEND if argv[i + 1] == "openai" else argv[i + 1]]
            i += 2
            continue
        if word == "--backend=openai":
            backend, word = True, f"--backend={OWN_BACKEND}"
        elif word.startswith("--backend="):
            backend = True
        out.append(word)
        i += 1
    if not backend:
        out += ["--backend", OWN_BACKEND]
    if not any(w == "--request-id-prefix" or w.startswith("--request-id-prefix=") for w in argv):
        out += ["--request-id-prefix", f"{ID_PREFIX}{run}-"]
    return out


class Captured:
    """The requests of one benchmark run, as our request function saw them."""

    def __init__(self) -> None:
        self.requests: list[tuple[Any, Any, dict | None]] = []  # (input, output, speculative block)

    def rows(self) -> list[dict[str, Any]]:
        """One dict a request (read after the run: vLLM sets the client queue time last)."""
        out = []
        for given, got, spec in self.requests:
            prompt = given.prompt if isinstance(given.prompt, str) else json.dumps(given.prompt)
            out.append({
                "id": given.request_id, "ok": bool(got.success), "ttft_s": got.ttft, "latency_s": got.latency,
                "output_tokens": got.output_tokens, "queue_s": got.client_queue_time, "start_s": got.start_time,
                "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(), "spec": spec})
        return out


def _messages(handler: Any, chunk: bytes) -> list[dict]:
    """The JSON messages a streamed chunk completes (as vLLM's request function splits them)."""
    out = []
    chunk = chunk.strip()
    if not chunk:
        return out
    for message in handler.add_chunk(chunk):
        body = message.removeprefix("data: ")
        if message.startswith(":") or body == "[DONE]":
            continue
        try:
            data = json.loads(body)
        except ValueError:
            continue
        if isinstance(data, dict):
            out.append(data)
    return out


class _Content:
    """A response body that hands each chunk to vLLM and, parsed, keeps the speculative block."""

    def __init__(self, content: Any, kept: dict) -> None:
        self._content, self._kept = content, kept

    async def iter_any(self):
        from vllm.benchmarks.lib.endpoint_request_func import StreamedResponseHandler

        handler = StreamedResponseHandler()
        async for chunk in self._content.iter_any():
            for data in _messages(handler, chunk):
                block = (data.get("metrics") or {}).get("speculative_decoding") if isinstance(
                    data.get("metrics"), dict) else None
                if isinstance(block, dict):
                    self._kept["spec"] = block
            yield chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._content, name)


class _Response:
    def __init__(self, response: Any, kept: dict) -> None:
        self._response, self.content = response, _Content(response.content, kept)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._response, name)


class _Post:
    def __init__(self, request: Any, kept: dict) -> None:
        self._request, self._kept = request, kept

    async def __aenter__(self) -> _Response:
        return _Response(await self._request.__aenter__(), self._kept)

    async def __aexit__(self, *exc: object) -> Any:
        return await self._request.__aexit__(*exc)


class _Session:
    """An aiohttp session whose ``post`` responses feed us every streamed message too."""

    def __init__(self, session: Any, kept: dict) -> None:
        self._session, self._kept = session, kept

    def post(self, *args: Any, **kwargs: Any) -> _Post:
        return _Post(self._session.post(*args, **kwargs), self._kept)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def register(captured: Captured) -> None:
    """Add ``OWN_BACKEND`` to vLLM's request functions (and to its OpenAI-compatible backends, so
    sampling flags and random prompts behave as with ``openai``): vLLM's completions function, its
    responses' speculative blocks kept in ``captured``."""
    from vllm.benchmarks.lib import endpoint_request_func as funcs

    completions = funcs.async_request_openai_completions

    async def request(request_func_input, session, pbar=None):
        kept: dict = {}
        output = await completions(request_func_input=request_func_input, session=_Session(session, kept), pbar=pbar)
        if request_func_input.request_id is not None:  # a counted request (not vLLM's ready check or warm-up)
            captured.requests.append((request_func_input, output, kept.get("spec")))
        return output

    funcs.ASYNC_REQUEST_FUNCS[OWN_BACKEND] = request
    if OWN_BACKEND not in funcs.OPENAI_COMPATIBLE_BACKENDS:
        funcs.OPENAI_COMPATIBLE_BACKENDS.append(OWN_BACKEND)  # the list vLLM's serve module imported


def _result_file(args: Any) -> Path | None:
    """The result file vLLM writes for ``args`` (None: it saves none)."""
    if not (args.save_result and args.result_filename):
        return None
    return Path(args.result_dir or ".") / args.result_filename


def write_requests(path: Path, captured: Captured, prefix: str) -> None:
    """The run's requests, in the order they finished, with the prefix of their ids."""
    from llama4spec.files import json_text, write_atomic

    write_atomic(path, json_text({"request_id_prefix": prefix, "requests": captured.rows()}, indent=None) + "\n")


def _load() -> Callable[[list[str]], object]:
    import vllm.platforms  # noqa: F401  (select the platform before the benchmark imports kernels)
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    def bench(argv: list[str]) -> object:
        captured = Captured()
        register(captured)  # before the parser lists the backends it accepts
        parser = FlexibleArgumentParser(prog="vllm bench serve")
        add_cli_args(parser)
        args = parser.parse_args(own_argv(argv, uuid.uuid4().hex[:8]))
        out = bench_main(args)
        result = _result_file(args)
        if result is not None and args.backend == OWN_BACKEND:
            write_requests(requests_path(result), captured, args.request_id_prefix)
        return out

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
