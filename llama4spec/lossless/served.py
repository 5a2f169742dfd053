"""The draft's side of the check against a running server: seeded completions (the OpenAI API's
``seed``) sent as prompt token ids, answered with the output's token ids (vLLM's
``return_token_ids``). What the server sends is bounded; a server that does not return what the
scoring needs is one line naming the fix.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

from llama4spec.errors import UserError
from llama4spec.files import plain

MAX_BYTES = 4 << 20  # one completion of a few thousand tokens is well under this
TIMEOUT_S = 600.0
IN_FLIGHT = 16


@dataclass(frozen=True)
class Request:
    prompt: list[int]  # token ids
    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    seed: int
    ignore_eos: bool


def body(model: str, r: Request) -> dict:
    """The JSON body of one completion request."""
    return {"model": model, "prompt": r.prompt, "max_tokens": r.max_tokens, "temperature": r.temperature,
            "top_p": r.top_p, "top_k": r.top_k, "seed": r.seed, "ignore_eos": r.ignore_eos,
            "return_token_ids": True, "stream": False}


def token_ids(url: str, answer: bytes) -> list[int]:
    """The output token ids of a completion answer; UserError naming what is missing and the fix."""
    fix = "check it against vLLM 0.32 or newer, which returns token ids for return_token_ids"
    try:
        data = json.loads(answer)
    except (ValueError, RecursionError, UnicodeDecodeError):
        raise UserError(f"{url}/v1/completions did not answer with JSON; it is not an OpenAI-compatible "
                        f"server: {fix}") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    ids = first.get("token_ids") if first else None
    if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids):
        raise UserError(f"{url}/v1/completions returned no output token ids (the check scores them with the "
                        f"target); {fix}")
    return ids


def _post(url: str, payload: dict, api_key: str | None) -> bytes:
    import requests

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with requests.post(f"{url}/v1/completions", json=payload, headers=headers, timeout=TIMEOUT_S,
                           stream=True, allow_redirects=False) as reply:
            answer = reply.raw.read(MAX_BYTES + 1, decode_content=True)
            status = reply.status_code
    except requests.RequestException as err:
        raise UserError(f"{url}/v1/completions did not answer ({type(err).__name__}); start the server with "
                        f"`llama4spec serve` or fix --url") from None
    if len(answer) > MAX_BYTES:
        raise UserError(f"{url}/v1/completions answered with more than {MAX_BYTES >> 20} MB; it is not a "
                        f"completion this check asked for")
    if status != 200:
        said = plain(answer.decode("utf-8", "replace"), 200)
        raise UserError(f"{url}/v1/completions refused a seeded request (HTTP {status}: {said}); serve the "
                        f"target with the draft on vLLM 0.32 or newer")
    return answer


def generate(url: str, model: str, requests: Sequence[Request], api_key: str | None = None) -> list[list[int]]:
    """The output token ids of every request, in order (``IN_FLIGHT`` at a time)."""
    url = url.rstrip("/")

    def one(r: Request) -> list[int]:
        return token_ids(url, _post(url, body(model, r), api_key))

    with ThreadPoolExecutor(max_workers=IN_FLIGHT) as pool:
        return list(pool.map(one, requests))
