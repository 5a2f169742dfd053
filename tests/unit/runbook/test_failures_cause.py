"""The reason a failed server gives: the first error its log reports, not vLLM's re-raises that
point back at it (lines taken from vLLM 0.32's log of a draft with a truncated weights file, and
of an unknown flag)."""

from __future__ import annotations

from pathlib import Path

from llama4spec.serving.process import root_cause

TRUNCATED_WEIGHTS = """\
(APIServer pid=664) WARNING 11-30 07:18:20 [system_utils.py:255] Found ulimit of 20000 and failed to automatically increase with error current limit exceeds maximum limit. This can cause fd limit errors like `OSError: [Errno 24] Too many open files`. Consider increasing with ulimit -n
Loading safetensors checkpoint shards:   0% Completed | 0/1 [00:00<?, ?it/s]
(Worker pid=1079) ERROR 11-30 07:19:02 [multiproc_executor.py:953] WorkerProc failed to start.
(Worker pid=1079) ERROR 11-30 07:19:02 [multiproc_executor.py:953] Traceback (most recent call last):
(Worker pid=1079) ERROR 11-30 07:19:02 [multiproc_executor.py:953]     with safe_open(st_file, framework="pt") as f:
(Worker pid=1079) ERROR 11-30 07:19:02 [multiproc_executor.py:953] safetensors._safetensors_rust.SafetensorError: Error while deserializing header: invalid header length
(EngineCore pid=798) INFO 11-30 07:19:02 [multiproc_executor.py:479] [shutdown] Executor: waiting for worker exit count=1
(EngineCore pid=798) ERROR 11-30 07:19:07 [core.py:1510] Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.
Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.
    raise RuntimeError(
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}
"""


def _log(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "server.log"
    path.write_text(text)
    return path


def test_the_first_error_is_the_cause(tmp_path: Path) -> None:
    assert root_cause(_log(tmp_path, TRUNCATED_WEIGHTS)) == \
        "SafetensorError: Error while deserializing header: invalid header length"


def test_an_unknown_flag(tmp_path: Path) -> None:
    log = "                     [model_tag]\napi_server.py: error: unrecognized arguments: --no-such-flag\n"
    assert root_cause(_log(tmp_path, log)) == "unrecognized arguments: --no-such-flag"


def test_no_error_no_cause(tmp_path: Path) -> None:
    assert root_cause(_log(tmp_path, TRUNCATED_WEIGHTS.splitlines()[0] + "\n")) is None  # a warning naming OSError
    assert root_cause(tmp_path / "absent.log") is None


def test_a_long_cause_is_cut(tmp_path: Path) -> None:
    cause = root_cause(_log(tmp_path, f"ValueError: {'x' * 1000}\n"), max_chars=50)
    assert cause is not None and len(cause) == 50 and cause.endswith("...")
