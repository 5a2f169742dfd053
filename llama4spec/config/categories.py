"""The prompt categories a config names: ``bench.category`` (read by the benchmark from the built-in
prompts or a spec_bench-format file) and ``dataset.category`` (of the built-in prompts)."""

from __future__ import annotations

from pathlib import Path

from llama4spec.config.schema import Config


def builtin_categories() -> tuple[str, ...]:
    from llama4spec.tiny.prompts import CATEGORIES  # imported only when a category is named

    return CATEGORIES


def bench_category_problem(cfg: Config) -> str | None:
    """Why the benchmark cannot serve ``bench.category`` alone (None when it can): it reads a
    category from the built-in prompts or from a spec_bench-format file, nowhere else."""
    b = cfg.bench
    if b.category is None:
        return None
    if b.dataset_name == "spec_bench":
        return _spec_bench_category_problem(b.category, b.dataset_path)
    if cfg.dataset.name != "builtin":
        return (f"bench.category={b.category}: the benchmark reads categories from the built-in prompts "
                f"(dataset=builtin) or from a spec_bench-format file such as mt-bench's question.jsonl "
                f"(bench.dataset_name=spec_bench bench.dataset_path=FILE); "
                f"for other prompts, bench one JSONL file per category with bench.dataset_name=custom")
    if b.dataset_path:
        return (f"bench.category={b.category}: the bench preset sends its own prompts ({b.dataset_name} "
                f"{b.dataset_path}), which the built-in prompts of that category would replace; drop "
                f"bench.category, or bench a file of that category's prompts (bench.dataset_path=FILE) without it")
    if b.category not in builtin_categories():
        return (f"bench.category '{b.category}' is not a category of the built-in prompts; "
                f"use one of {', '.join(builtin_categories())}")
    return None


def _spec_bench_category_problem(category: str, path: str | None) -> str | None:
    """A category that a local spec_bench-format file does not hold: vLLM's filter would leave no
    prompt (None when it holds it, or when the file is not here to read: a hub dataset, a path on
    another machine)."""
    from llama4spec.files import Expect, Unreadable, plain, read_text

    if not path or not Path(path).is_file():
        return None
    try:
        text = read_text(Path(path), Expect("prompt file", "give a spec_bench-format JSONL file"))
    except Unreadable as err:
        return str(err)
    import json

    found: set[str] = set()
    for line in text.splitlines():
        try:
            row = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("category"), str):
            found.add(row["category"])
    if category in found or not found:
        return None
    return (f"bench.category={category}: {plain(path)} has no prompt of that category, so the benchmark would "
            f"send none; use one of {', '.join(sorted(found)[:20])}")


def check_categories(cfg: Config, problems: list[str]) -> None:
    """A category the prompts it is read from do not have (the built-in ones are known here)."""
    problem = bench_category_problem(cfg)
    if problem:
        problems.append(problem)
    ds = cfg.dataset
    if ds.category is not None and ds.name == "builtin" and ds.category not in builtin_categories():
        problems.append(f"dataset.category '{ds.category}' is not a category of the built-in prompts; "
                        f"use one of {', '.join(builtin_categories())}")
