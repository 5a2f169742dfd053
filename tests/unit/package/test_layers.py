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


def _own_kinds() -> dict[str, set[str]]:
    """Where (relative to the package) each kind's name may be used: its own module under
    ``runbook/steps/``, or the whole of the feature package that holds it (``sweep/``: sweep,
    settle; ``capacity/``: capacity, search)."""
    from llama4spec.runbook.steps import KINDS, MODULES

    own: dict[str, set[str]] = {}
    for name in KINDS:
        parts = MODULES.get(name, f"llama4spec.runbook.steps.{name}").split(".")[1:]
        where = "/".join(parts) + ".py" if parts[-2] == "steps" else "/".join(parts[:-1]) + "/"
        own.setdefault(where, set()).add(name)
    return own


def test_step_kinds_are_asked_their_traits_not_their_names():
    """No code tests a step's kind by name (``p.kind == "serve"``, ``kind in ("bench", "stop")``,
    ``kinds.get(n) == "bench"``, ``step.get("kind") == "sweep"``) or keeps a tuple of kind names,
    except a kind's own module (``runbook/steps/<kind>.py``) or its feature's package
    (``sweep/``, ``capacity/``) naming its own kinds: what a kind is and does is
    declared there (``KIND``: keys, traits, plan, execute, describe, plan_record, and for a merging
    kind merge_part and page_part); everything else asks a kind its traits and hooks
    (``steps.traits_of``, ``steps.named``). The registry (``runbook/steps/__init__.py``) lists them."""
    import re

    from llama4spec.runbook.steps import KINDS

    package = REPO / "llama4spec"
    own = _own_kinds()
    test = re.compile(r"\bkind\s*(==|!=|\bin\b|\bnot in\b)")
    names = "|".join(KINDS)
    listed = re.compile(rf"(?<![\w.])[(\[{{]\s*\"({names})\"\s*,\s*\"({names})\"")  # a tuple, list or set of names
    compared = re.compile(rf"(==|!=|\bin\b|\bnot in\b)\s*[\"']({names})[\"']|[\"']({names})[\"']\s*(==|!=)")
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith("tiny/") or rel == "runbook/steps/__init__.py":  # tiny/: its own 'kind' (file, dir)
            continue
        mine = set().union(*(kinds for where, kinds in own.items() if rel == where or
                             where.endswith("/") and rel.startswith(where)))
        for n, line in enumerate(path.read_text().splitlines(), 1):
            named = {m.group(2) or m.group(3) for m in compared.finditer(line)}
            named |= {name for m in listed.finditer(line) for name in m.groups()}
            if test.search(line) or named - mine:
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == [], "kind names tested outside their kind's module or package:\n" + "\n".join(found)


def test_the_scan_knows_where_each_kind_lives():
    """The scan above allows a name only where its kind is declared."""
    own = _own_kinds()
    assert own["sweep/"] == {"sweep", "settle"}
    assert own["capacity/"] == {"capacity", "search"}
    assert own["runbook/steps/compare.py"] == {"compare"}
