"""Composing once per distinct choice of config groups gives what a full Hydra composition gives:
the same resolved config, the same choices, the same error, for every composition the shipped
runbooks make and for 200 generated override lists (group choices whose defaults interpolate the
target, settings, ``+key``, ``~key``, mistakes)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from llama4spec.config import compose, conf_dirs, group_trees
from llama4spec.config.composed import Raw
from llama4spec.config.schema import register
from tests.helpers import REPO

GROUPS = {
    "target": ["tiny", "llama4_scout", "llama4_maverick", "llama4_maverick_fp8"],
    "draft": ["none", "tiny_eagle", "tiny_eagle_imperfect", "eagle_llama4_scout", "ngram", "eagle3_llama4_maverick"],
    "memory": ["cpu", "default", "scout_reference"],
    "bench": ["random_tiny", "mtbench"],
    "dataset": ["builtin", "mtbench"],
    "hardware": ["cpu", "h100_80gb"],
    "parallel": ["tp1", "tp4"],
    "experiment": ["tiny_cpu", "scout_eagle_offline"],
    "cluster": ["local", "slurm"],
}
SETTINGS = [
    "lookahead=1", "lookahead=5", "bench.max_concurrency=4", "memory.max_num_seqs=32", "serve.port=8800",
    "bench.num_prompts=8", "bench.output_len=64", "generation.max_tokens=16", "serve.host=0.0.0.0",
    "lookahead=${bench.max_concurrency}",  # an interpolation resolved after the settings apply
    "+serve.no_such_key=1", "+extra_top_level=2", "~draft.model", "~serve.api_key_env", "no_such_key=3",
    "bench.max_concurrency=not_a_number", "draft.method=eagle", "target.model=/tmp/elsewhere",
]


def _outcome(compose_fn, overrides: list[str]):
    """(resolved YAML, choices, typed config) or the one-line error, as compose_config reports it."""
    try:
        c = compose_fn(overrides)
    except compose._compose_errors() as err:
        return ("error", compose._friendly(err, overrides))
    return OmegaConf.to_yaml(c.raw), c.choices, c.cfg


def _registered() -> None:
    register()
    conf_dirs.register_resolvers()


def _in_full(overrides: list[str]):
    """One full Hydra composition, settings included (no memo): the reference."""
    _registered()
    return group_trees.finish(*group_trees.tree_and_choices(list(overrides)), list(overrides))


def _memoised(overrides: list[str]):
    _registered()
    return group_trees.compose(list(overrides), list(overrides))


def _same(overrides: list[str]) -> None:
    assert _outcome(_memoised, overrides) == _outcome(_in_full, overrides), overrides


def generated(n: int, seed: int = 20261201) -> list[list[str]]:
    """``n`` override lists: one of 25 choices of groups (as a sweep reuses a few), settings, in
    any order."""
    rng = random.Random(seed)
    choices = [[f"{g}={rng.choice(options)}" for g, options in GROUPS.items() if rng.random() < 0.35]
               for _ in range(25)]
    lists = []
    for _ in range(n):
        groups, settings = rng.choice(choices), rng.sample(SETTINGS, rng.randint(0, 3))
        lists.append(rng.sample(groups + settings, len(groups) + len(settings)))
    return lists


@pytest.mark.parametrize("chunk", range(4))
def test_the_memo_equals_a_full_composition_on_generated_override_lists(chunk: int) -> None:
    lists = generated(200)
    assert len({tuple(sorted(o)) for o in lists}) > 150 and sum("~" in " ".join(o) for o in lists) > 20
    for overrides in lists[chunk::4]:
        _same(overrides)


def _shipped_compositions() -> list[list[str]]:
    from llama4spec.runbook.plan import plan_file

    seen: dict[tuple[str, ...], None] = {}
    for path in sorted((REPO / "runbooks").glob("*.yaml")):
        plan = plan_file(path, lambda name: Path("/nonexistent-runs") / name)
        for p in plan.steps:
            if p.composed is not None:
                seen.setdefault(tuple(p.composed.overrides))
    return [list(o) for o in seen]


def test_the_memo_equals_a_full_composition_for_every_shipped_runbook() -> None:
    compositions = _shipped_compositions()
    assert len(compositions) >= 20
    for overrides in compositions:
        _same(overrides)


def test_a_sweep_composes_and_resolves_each_distinct_choice_of_groups_once(monkeypatch) -> None:
    trees: list[list[str]] = []
    resolved: list[list[str]] = []
    real, real_finish = group_trees.tree_and_choices, group_trees.finish
    monkeypatch.setattr(group_trees, "GROUP_TREES", {})
    monkeypatch.setattr(compose, "_COMPOSED", {})
    monkeypatch.setattr(group_trees, "tree_and_choices", lambda kept: trees.append(list(kept)) or real(kept))
    monkeypatch.setattr(group_trees, "finish", lambda cfg, choices, o: resolved.append(o) or real_finish(cfg, choices, o))
    for k in (1, 2, 3, 5):
        for c in (1, 4):
            composed = compose.compose_config(["target=tiny", "draft=tiny_eagle", f"lookahead={k}",
                                               f"bench.max_concurrency={c}"])
            assert (composed.cfg.lookahead, composed.cfg.bench.max_concurrency) == (k, c)
    assert trees == [["target=tiny", "draft=tiny_eagle"]]
    assert resolved == [[]]  # the groups' tree alone; every setting is a leaf value on it


# -- leaf values on the groups' resolved tree -------------------------------------------------------
LEAVES = [
    "memory.max_num_seqs=null", "lookahead=null", "serve.port='8800'", "bench.temperature=1", "serve.host=8",
    "offline.baseline=true", "offline.baseline=maybe", "draft.method=null", "lookahead=1", "lookahead=7",
    "bench.request_rate=2.5", "env.NO_SUCH=1", "serve.extra_args=[--x]", "memory.max_num_seqs=???",
    "bench.category='${oc.env:HOME}'", "target.model=", "generation.seed=-3", "memory.gpu_memory_utilization=1e-1",
    "draft.lookahead_schedule=[[1,4,3]]", "cluster.slurm.time_min=30", "cluster.slurm=7", "serve=7",
]


def _outcome_with_containers(compose_fn, overrides: list[str]):
    """``_outcome``, with the plain data before and after the DictConfig is read."""
    try:
        c = compose_fn(overrides)
    except compose._compose_errors() as err:
        return ("error", compose._friendly(err, overrides))
    before = c.containers()
    return OmegaConf.to_yaml(c.raw), c.choices, c.cfg, before, c.containers()


@pytest.mark.parametrize("leaves", [LEAVES[i:i + 4] for i in range(0, len(LEAVES), 4)] +
                         [["lookahead=1", "lookahead=5", "serve.port=8800", "serve.port=null"]])
def test_leaf_values_give_what_hydra_gives(leaves: list[str]) -> None:
    """Values applied to the groups' resolved tree as leaves: the same value, conversion and error as
    Hydra's own application before resolution, alone and together."""
    for groups in (["target=tiny", "draft=tiny_eagle"], ["target=llama4_scout"]):
        for overrides in [[*groups, o] for o in leaves] + [[*groups, *leaves]]:
            assert _outcome_with_containers(_memoised, overrides) == _outcome_with_containers(_in_full, overrides), \
                overrides


def test_an_interpolation_that_reads_a_set_key_is_resolved_after_it(tmp_path: Path) -> None:
    """A config of the user's whose value interpolates another key: that key set by an override is
    what the interpolation reads (no shortcut through the groups' resolved tree)."""
    (tmp_path / "serve").mkdir()
    (tmp_path / "serve" / "mine.yaml").write_text("defaults: [default]\nserved_model_name: tiny-${lookahead}\n"
                                                  "health_timeout_s: ${bench.num_prompts}\n")
    search = f"hydra.searchpath=[file://{tmp_path}]"
    for overrides in ([search, "serve=mine"], [search, "serve=mine", "lookahead=6"],
                      [search, "serve=mine", "bench.num_prompts=12", "lookahead=2"]):
        _same(overrides)
    _registered()
    c = compose.compose_config([search, "serve=mine", "lookahead=6", "bench.num_prompts=12"])
    assert c.cfg.serve.served_model_name == "tiny-6" and c.cfg.serve.health_timeout_s == 12.0


def test_a_leaf_composition_makes_its_dictconfig_only_when_read() -> None:
    _registered()
    made = []
    real = Raw.get
    c = group_trees.compose(["target=tiny", "lookahead=4"], ["target=tiny", "lookahead=4"])
    assert c.cfg.lookahead == 4 and c.containers()[0]["lookahead"] == 4 and c._raw._cfg is None
    Raw.get = lambda self: made.append(1) or real(self)
    try:
        assert c.raw.lookahead == 4 and made == [1]
    finally:
        Raw.get = real
    # compose_config's copies share one read-only DictConfig; each has its own typed object
    a, b = compose.compose_config(["target=tiny", "lookahead=4"]), compose.compose_config(["target=tiny", "lookahead=4"])
    assert a.raw is b.raw and OmegaConf.is_readonly(a.raw) and a.cfg == b.cfg and a.cfg is not b.cfg
