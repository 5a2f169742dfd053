"""Secrets: where they come from (by variable name, never on argv) and how they are hidden.

Every record, log line and printed command goes through ``redact_env`` / ``redact_text``.
"""

from __future__ import annotations

import os
import re
from typing import Mapping

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION)", re.IGNORECASE)
REDACTED = "***"


def redact_env(env: Mapping[str, str], secrets: tuple[str, ...] = ()) -> dict[str, str]:
    """Values of secret-looking names, and any value equal to a known secret, become ***."""
    known = {s for s in secrets if s}
    return {k: REDACTED if SECRET_NAME.search(k) or v in known else v for k, v in sorted(env.items())}


def redact_text(text: str, secrets: tuple[str, ...]) -> str:
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, REDACTED)
    return text


def api_key_env(api_key_var: str | None, as_name: str = "VLLM_API_KEY",
                environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``{as_name: key}`` from the variable ``serve.api_key_env`` names (never on argv); {} when unset."""
    return {as_name: environ[api_key_var]} if api_key_var and environ.get(api_key_var) else {}
