"""A plan's configs are read for secrets once per distinct ``secret_view``: objects with the same view
yield the same known secrets (generated objects, changed only where the view says nothing is read),
and a plan whose steps differ only in numbers still finds a secret each of them holds."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from llama4spec.engine.secrets import harvest, known_secrets, oc_env_names, secret_view
from llama4spec.results.provenance import plan_secrets

KEYS = ["env", "HF_TOKEN", "api_key", "max_tokens", "port", "extra_args", "hosts", "MY_SETTING", "token", "name"]
STRINGS = ["--api-key", "sk-live-1234", "--port", "8000", "x=1", "+env.HF_TOKEN=hf_abcdef", "https://u:pw1234@h",
           "${oc.env:MY_API_KEY}", "plain", "-v", "--hf-token=hf_zzzz", ""]
SCALARS = [0, 1, 7, 2.5, True, False, None]


def _random(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.3:
        return {rng.choice(KEYS): _random(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 3 and roll < 0.5:
        return [_random(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return rng.choice(STRINGS) if roll < 0.75 else rng.choice(SCALARS)


def _renumbered(obj: Any, rng: random.Random, keep: bool = False) -> Any:
    """``obj`` with the numbers and nulls no rule reads changed (those under secret names kept)."""
    if isinstance(obj, dict):
        return {k: _renumbered(v, rng, keep=secret_view({k: 1}) != ("map", ())) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_renumbered(v, rng) for v in obj]
    if not isinstance(obj, str) and not keep:
        return rng.choice(SCALARS)
    return obj


def test_objects_with_the_same_view_have_the_same_secrets() -> None:
    rng = random.Random(7)
    seen: dict[Any, tuple[set[str], set[str]]] = {}
    for _ in range(3000):
        obj = _random(rng)
        for variant in (obj, _renumbered(obj, rng)):
            found = (harvest(variant), oc_env_names(variant))
            assert seen.setdefault(secret_view(variant), found) == found, variant
    assert len(seen) > 300


def test_a_sweep_of_numbers_still_finds_each_configs_secret(tmp_path: Path) -> None:
    from llama4spec.runbook.plan import plan_file

    path = tmp_path / "rb.yaml"
    path.write_text("name: rb\noverrides: [target=tiny, memory=cpu, bench=random_tiny, '+env.HF_TOKEN=hf_sweep_secret']\n"
                    "steps:\n  - id: sweep\n    kind: sweep\n    repeats: 1\n    matrix:\n"
                    "      lookahead: [1, 2, 3]\n      bench.max_concurrency: [1, 2]\n")
    plan = plan_file(path, lambda name: tmp_path / "runs" / name)
    secrets = plan_secrets(plan, environ={})
    assert "hf_sweep_secret" in secrets and len(secrets) == len(set(secrets))
    assert set(secrets) == set(known_secrets(*[c for p in plan.steps if p.composed for c in p.composed.containers()],
                                             *[p.composed.overrides for p in plan.steps if p.composed],
                                             *[a for p in plan.steps for a in (p.argv, p.exec_argv, {"env": p.env})],
                                             {"env": plan.runbook.env}, plan.runbook.overrides, environ={}))
