"""The environment of this process while an in-process step (offline, fetch) runs."""

from __future__ import annotations

import contextlib
import os
from typing import Mapping


@contextlib.contextmanager
def process_env(env: Mapping[str, str]):
    """Set ``env`` in this process for the duration of an in-process step, then restore it."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
