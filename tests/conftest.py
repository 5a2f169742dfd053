"""Shared test set-up: an isolated tiny-model cache and session-scoped engines.

Engine starts cost about 45 s here, so every real engine or server is shared across tests
through session-scoped fixtures.
"""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

# Every test (and every CLI subprocess it starts) uses a fresh tiny-model cache.
os.environ.setdefault("LLAMA4SPEC_TINY_DIR", str(Path(tempfile.mkdtemp(prefix="llama4spec-tiny-")) / "tiny"))
# No test reaches the model hub: configs come from local directories or bundled copies.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
# A shell starts a background job with SIGINT ignored, and exec keeps an ignored signal ignored:
# every command a test starts (and Ctrl-Cs) would then ignore SIGINT. A handler here is reset to
# the default in each child, however the suite itself was started.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def tiny_dir() -> Path:
    from llama4spec.tiny.build import ensure_built

    return ensure_built()
