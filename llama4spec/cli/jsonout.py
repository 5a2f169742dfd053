"""Machine-readable output (``--json``, ``--yaml``): ONE document on stdout and nothing else there.

Every document carries a ``schema`` key, ``llama4spec.<command>/<version>``; the shapes are listed
in docs/machine-readable-output.md. A version changes only when a key is removed or changes
meaning; new keys may appear without one. Errors stay one line on stderr (exit 2)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

VERSION = 1


def schema(command: str) -> str:
    return f"llama4spec.{command}/{VERSION}"


def add_json_flag(p: argparse.ArgumentParser, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true",
                   help=f"print {what} as one JSON document on stdout (shape: docs/machine-readable-output.md)")


def emit(document: dict[str, Any]) -> None:
    """Write ``document`` as JSON to stdout (strict JSON: no NaN or infinity; UserError naming the
    first such value, before anything is written)."""
    from llama4spec.errors import UserError
    from llama4spec.files import non_finite

    where = non_finite(document)
    if where is not None:
        raise UserError(f"cannot print JSON: {where} is not a finite number (NaN or infinity), which JSON cannot "
                        f"hold; give it a finite value (see `llama4spec validate`)")
    sys.stdout.write(json.dumps(document, indent=2, allow_nan=False, default=str) + "\n")
    sys.stdout.flush()


def finding(f: Any) -> dict[str, str]:
    """A doctor finding as JSON."""
    return {"rule": f.rule, "severity": f.severity, "what": f.what, "why": f.why, "fix": f.fix}


def model_source(role: str, m: Any) -> dict[str, Any]:
    """Where a model's config.json was read from."""
    return {"role": role, "ref": m.ref, "source": m.source, "path": None if m.path is None else str(m.path)}
