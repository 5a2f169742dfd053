"""No dead code: vulture (configured in pyproject.toml [tool.vulture]) finds nothing unused in
llama4spec/ and benchmarks/, and each name its whitelist marks as used is one it would report."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

WHITELIST = Path(__file__).with_name("dead_code_whitelist.py")


def _vulture(*paths: str) -> subprocess.CompletedProcess:
    """vulture with the settings of pyproject.toml; ``paths`` replace its paths when given."""
    result = subprocess.run([sys.executable, "-m", "vulture", *paths], cwd=REPO, capture_output=True, text=True,
                            timeout=120)
    if "No module named vulture" in result.stderr:
        pytest.fail(f"vulture is not installed next to {sys.executable} (pip install -e '.[test]')")
    assert result.returncode in (0, 3), f"vulture exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def test_nothing_is_unused() -> None:
    result = _vulture()
    assert result.stdout == "", (
        "unused code: delete it (and the tests that only test it), or, when something outside the package "
        f"uses it, add it to {WHITELIST.relative_to(REPO)} with the reason\n{result.stdout}")


def test_every_whitelisted_name_is_needed() -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    whitelist = str(WHITELIST.relative_to(REPO))
    paths = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["vulture"]["paths"]
    assert whitelist in paths, f"pyproject.toml [tool.vulture] paths should list {whitelist}"
    reported = set(re.findall(r"unused \w+ '(\w+)'", _vulture(*(p for p in paths if p != whitelist)).stdout))
    listed = re.findall(r"^_\.(\w+)", WHITELIST.read_text(), re.MULTILINE)
    assert listed, f"no entry read from {WHITELIST}"
    assert [name for name in listed if name not in reported] == [], "whitelisted but used inside the package"
