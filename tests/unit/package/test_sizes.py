"""The house's sizes: no module of the package over 400 lines, no function or method over 60
(a module that needs comment banners is several modules; a function that long is several steps)."""

from __future__ import annotations

import ast

from tests.helpers import REPO

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
PACKAGE = REPO / "llama4spec"


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(REPO)): n for p in _modules()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_is_over_60_lines():
    long = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(REPO)}:{node.name}"] = lines
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"

