"""The package's layering holds: import-linter's contracts (pyproject.toml [tool.importlinter]: imports
run downward, no cycle between the modules of a package) are kept, no module's imports lead back to
it (a package's __init__ and its own modules included), and building the CLI's parser pulls in
neither vllm nor torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO


def test_import_contracts_are_kept():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    assert lint_imports.exists(), f"import-linter is not installed next to {sys.executable} (pip install import-linter)"
    result = subprocess.run([str(lint_imports), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"lint-imports exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "broken" in result.stdout and "0 broken" in result.stdout, result.stdout


def test_no_module_imports_itself_through_others():
    import grimp  # import-linter's graph; function-level imports count

    graph = grimp.build_graph("llama4spec", cache_dir=None)
    loops = sorted((module, imported) for module in graph.modules
                   for imported in graph.find_modules_directly_imported_by(module)
                   if graph.chain_exists(imported, module))
    assert loops == [], "imports that lead back to their importer:\n" + "\n".join(
        f"{module} -> {imported}: {' -> '.join(graph.find_shortest_chain(imported, module))}"
        for module, imported in loops)


def test_building_the_parser_imports_no_engine():
    code = (
        "import json, sys\n"
        "import llama4spec.cli.main as m\n"
        "parser = m.build_parser()\n"
        "parser.parse_args(['show', 'target=llama4_scout'])\n"
        "heavy = sorted(n for n in sys.modules if n.split('.')[0] in ('vllm', 'torch'))\n"
        "print(json.dumps(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    heavy = json.loads(result.stdout.strip().splitlines()[-1])
    assert heavy == [], f"building the parser imported {heavy[:10]}"


# Comparisons of a plan.json record's kind with a kind's name that remain outside runbook/steps/:
# the merging kinds' own parts of ``report A B --out M`` and of report.html, which move into hooks on
# the kind. The scan fails on any other, and on one of these gone (so the list only shrinks).
KIND_NAMES_STILL_COMPARED = {
    "runbook/capacity/write_report.py": 1,  # a capacity step's searches in plan.json
}


def test_step_kinds_are_asked_their_traits_not_their_names():
    """Outside ``runbook/steps/`` no code tests a step's kind by name (``p.kind == "serve"``,
    ``kind in ("bench", "stop")``, ``kinds.get(n) == "bench"``, ``step.get("kind") == "sweep"``) or
    keeps a tuple of kind names: what a kind is and does is declared by its own module (``KIND``:
    keys, traits, plan, execute, describe, plan_record); a plan.json record's kind is asked its
    traits (``steps.traits_of``)."""
    import re

    from llama4spec.runbook.steps import KINDS

    package = REPO / "llama4spec"
    test = re.compile(r"\bkind\s*(==|!=|\bin\b|\bnot in\b)")
    names = "|".join(KINDS)
    listed = re.compile(rf"(?<![\w.])[(\[{{]\s*\"({names})\"\s*,\s*\"({names})\"")  # a tuple, list or set of names
    compared = re.compile(rf"(==|!=|\bin\b|\bnot in\b)\s*[\"']({names})[\"']|[\"']({names})[\"']\s*(==|!=)")
    found, still = [], {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith("runbook/steps/") or rel.startswith("tiny/"):  # tiny/: its own 'kind' (file, dir)
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if test.search(line) or listed.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
            elif compared.search(line):
                still.setdefault(rel, []).append(f"{rel}:{n}: {line.strip()}")
    for rel, lines in still.items():
        if len(lines) != KIND_NAMES_STILL_COMPARED.get(rel, 0):
            found.extend(lines)
    gone = [rel for rel in KIND_NAMES_STILL_COMPARED if rel not in still]
    assert gone == [], f"no kind name compared in {gone} any more: take it off KIND_NAMES_STILL_COMPARED"
    assert found == [], "kind names tested outside runbook/steps/:\n" + "\n".join(found)
