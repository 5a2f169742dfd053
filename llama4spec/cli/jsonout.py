"""Machine-readable output (``--json``, ``--yaml``): ONE document on stdout and nothing else there.

Every document carries a ``schema`` key, ``llama4spec.<command>/<version>``; the shapes are listed
in docs/machine-readable-output.md. A version changes only when a key is removed or changes
meaning; new keys may appear without one. Errors stay one line on stderr (exit 2)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

VERSION = 1


def schema(command: str) -> str:
    return f"llama4spec.{command}/{VERSION}"


def add_json_flag(p: argparse.ArgumentParser, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true",
                   help=f"print {what} as one JSON document on stdout (shape: docs/machine-readable-output.md)")


def emit(document: dict[str, Any]) -> None:
    """Write ``document`` as strict JSON to stdout: the exit code is the command's own, whatever the
    figures; a NaN or infinity is printed null and named in ``written_null`` (``files.json_text``),
    with a note on stderr."""
    from llama4spec.files import json_text, non_finite_keys

    sys.stdout.write(json_text(document) + "\n")
    sys.stdout.flush()
    nulled = non_finite_keys(document)
    if nulled:
        from llama4spec.cli.common import err

        err.print(f"note: printed as null (not a finite number): {', '.join(nulled[:10])}", markup=False,
                  highlight=False, soft_wrap=True)


def finding(f: Any) -> dict[str, str]:
    """A doctor finding as JSON."""
    return {"rule": f.rule, "severity": f.severity, "what": f.what, "why": f.why, "fix": f.fix}


def model_source(role: str, m: Any) -> dict[str, Any]:
    """Where a model's config.json was read from."""
    return {"role": role, "ref": m.ref, "source": m.source, "path": None if m.path is None else str(m.path)}
