"""Before a benchmark against a server that runs already (``bench --url``): is it an
OpenAI-compatible server serving the model the config names? A server that answers 200 to
``/health`` and nothing else is no such server; what it serves, or why not, is one line.

Whatever the server sends is bounded (time, bytes, nesting) and shown escaped and short."""

from __future__ import annotations

import json

from llama4spec.files import plain

MAX_BYTES = 1 << 20  # a model list is a few kB; more is not an OpenAI-compatible answer
TIMEOUT_S = 5.0
SHOWN = 5  # model ids named in a message


def _get(url: str, api_key: str | None) -> tuple[int, bytes]:
    """(status, at most MAX_BYTES + 1 bytes of the body); requests' exceptions propagate."""
    import requests

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with requests.get(url, headers=headers, timeout=TIMEOUT_S, stream=True, allow_redirects=False) as reply:
        body = reply.raw.read(MAX_BYTES + 1, decode_content=True)
        return reply.status_code, body


def served_models(body: bytes) -> list[str] | None:
    """The model ids of an OpenAI ``/v1/models`` answer ({"object": "list", "data": [{"id": ...}]});
    None when the body is not one."""
    if len(body) > MAX_BYTES:
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in items):
        return None
    return [m["id"] for m in items]


def model_problem(url: str, model: str, api_key: str | None, key_var: str | None) -> str | None:
    """Why the benchmark cannot run against ``url`` for ``model`` (None when it can): no answer at
    /health, no OpenAI-compatible /v1/models, a refused API key, another model served."""
    import requests

    fix_url = "start one with `llama4spec serve` or fix --url"
    try:
        status, _ = _get(f"{url}/health", None)
    except requests.RequestException:
        status = None
    if status != 200:
        return f"no server answers at {url}/health; {fix_url}"
    try:
        status, body = _get(f"{url}/v1/models", api_key)
    except requests.RequestException as err:
        return f"{url}/v1/models does not answer ({type(err).__name__}); it is not an OpenAI-compatible server: {fix_url}"
    if status in (401, 403):
        given = f"the key in ${key_var} is refused" if api_key else "no API key was sent"
        return (f"{url}/v1/models answers {status}: wrong or missing API key ({given}); set serve.api_key_env to "
                f"the variable that holds the server's key")
    models = served_models(body) if status == 200 else None
    if models is None:
        return (f"{url}/v1/models answers HTTP {status} without a model list: it is not an OpenAI-compatible "
                f"server (vLLM's); {fix_url}")
    if model not in models:
        serves = ", ".join(f"'{plain(m, 80)}'" for m in models[:SHOWN]) + (" ..." if len(models) > SHOWN else "")
        return (f"{url} serves {serves or 'no model'}, not '{plain(str(model), 80)}' (the config's serve.served_model_name, "
                f"else target.model); give the config that server was started with, or set "
                f"serve.served_model_name to the name it serves")
    return None


def config_problem(url: str, cfg) -> str | None:
    """``model_problem`` for the model a config names (serve.served_model_name, else target.model), with
    the API key its ``serve.api_key_env`` variable holds."""
    import os

    var = cfg.serve.api_key_env
    return model_problem(url, cfg.serve.served_model_name or cfg.target.model, os.environ.get(var) if var else None,
                         var)
