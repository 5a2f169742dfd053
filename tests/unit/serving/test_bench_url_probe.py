"""``bench --url`` checks, before the benchmark starts, that the URL is an OpenAI-compatible server
serving the configured model (``GET /v1/models``, with the API key where one is configured), and
says what it serves instead. A server that answered 200 to ``/health`` and nothing else got the
load generator started against it.

The servers here are hostile ones started by the test (http.server on 127.0.0.1, port 0), not
stand-ins for vLLM: health only, a 401, another model list, garbage, a huge or deeply nested body."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from pathlib import Path

import pytest

from llama4spec.serving.probe import MAX_BYTES, model_problem

MODEL = "served-model"
KEY = "right-key"


def _models(*ids: str) -> bytes:
    return json.dumps({"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}).encode()


# mode: (status of /v1/models, its body); None: /health only (404 elsewhere)
MODES = {
    "health only": None,
    "401": (401, b'{"error": "Unauthorized"}'),
    "key": "key",  # 401 unless the right key is sent, then MODEL
    "other model": (200, _models("someone/else", "\x1b[31mred")),
    "many models": (200, _models(*[f"m{i}" for i in range(50)])),
    "empty list": (200, _models()),
    "not json": (200, b"<html>hello</html>"),
    "huge": (200, b"[" + b" " * (MAX_BYTES + 10) + b"]"),
    "deep": (200, b"[" * 100_000 + b"]" * 100_000),
    "500": (500, b"oops"),
    "served": (200, _models(MODEL)),
}


@contextlib.contextmanager
def hostile(mode: str):
    answer = MODES[mode]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/health":
                status, body = 200, b""
            elif self.path == "/v1/models" and answer == "key":
                good = self.headers.get("Authorization") == f"Bearer {KEY}"
                status, body = (200, _models(MODEL)) if good else (401, b"{}")
            elif self.path == "/v1/models" and answer is not None:
                status, body = answer
            else:
                status, body = 404, b""
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # the load generator must never get here
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("mode, key, said", [
    ("health only", None, "not an OpenAI-compatible server"),
    ("401", None, "wrong or missing API key (no API key was sent)"),
    ("key", None, "wrong or missing API key"),
    ("key", "wrong", "wrong or missing API key (the key in $K is refused)"),
    ("other model", None, "serves 'someone/else', '\\x1b[31mred', not 'served-model'"),
    ("many models", None, "'m4' ..."),
    ("empty list", None, "serves no model"),
    ("not json", None, "without a model list"),
    ("huge", None, "without a model list"),
    ("deep", None, "without a model list"),
    ("500", None, "HTTP 500"),
])
def test_hostile_servers_one_line(mode: str, key, said: str) -> None:
    with hostile(mode) as url:
        problem = model_problem(url, MODEL, key, "K")
    assert problem and said in problem and "\n" not in problem and "\x1b" not in problem, problem


def test_the_configured_model_passes() -> None:
    with hostile("served") as url:
        assert model_problem(url, MODEL, None, None) is None
    with hostile("key") as url:
        assert model_problem(url, MODEL, KEY, "K") is None


def test_nothing_listening() -> None:
    from tests.helpers import free_port

    assert "no server answers" in model_problem(f"http://127.0.0.1:{free_port()}", MODEL, None, None)


@pytest.mark.parametrize("mode, extra, env, said", [
    ("health only", [], {}, "not an OpenAI-compatible server"),
    ("401", [], {}, "wrong or missing API key"),
    ("key", ["serve.api_key_env=L4S_TEST_KEY"], {"L4S_TEST_KEY": "nope"}, "the key in $L4S_TEST_KEY is refused"),
    ("other model", [], {}, "serves 'someone/else'"),
])
def test_bench_refuses_before_the_load_generator_starts(cli, tmp_path: Path, monkeypatch, mode, extra, env,
                                                         said) -> None:
    from llama4spec.serving import benchmark as bench

    monkeypatch.setattr(bench, "run_bench", lambda *a, **k: pytest.fail("the benchmark started"))
    with hostile(mode) as url:
        done = cli("bench", "--url", url, "--out", tmp_path / "out", "target=tiny", "draft=none", *extra, env=env)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "nope" not in done.stderr, done.stderr
