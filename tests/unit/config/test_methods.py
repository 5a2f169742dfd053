"""The table of speculative methods (``config.methods``) against vLLM's own declarations, the
configs shipped under ``conf/draft/``, and the consumers that ask it."""

from __future__ import annotations

from typing import Literal, get_args, get_origin

import pytest
import yaml

from llama4spec.config import methods
from llama4spec.config.compose import compose_config
from tests.helpers import REPO


def _names(literal) -> set[str]:
    """Every string a (nested) ``Literal`` admits."""
    out: set[str] = set()
    for arg in get_args(literal):
        out |= _names(arg) if get_origin(arg) is Literal else {arg}
    return out


@pytest.fixture(scope="module")
def speculative():
    return pytest.importorskip("vllm.config.speculative")


def test_the_table_holds_vllms_methods_once(speculative) -> None:
    vllm = _names(speculative.SpeculativeMethod)
    mtp = _names(speculative.MTPModelTypes)
    assert {m.name for m in methods.TABLE} == (vllm - mtp) | {"mtp"} and len(methods.TABLE) == 13
    assert len(methods.BY_NAME) == len(methods.TABLE)


def test_async_scheduling_as_vllm_decides_it(speculative) -> None:
    """vLLM 0.32 keeps async scheduling on for the EAGLE family, ngram_gpu, draft_model, dspark and
    dflash (``VllmConfig.__post_init__``), off for every other method."""
    kept = _names(speculative.EagleModelTypes) | _names(speculative.NgramGPUTypes) | {"draft_model", "dspark", "dflash"}
    for m in methods.TABLE:
        assert m.async_scheduling == (m.name in kept | {"mtp"}), m.name


def test_a_config_names_exactly_the_methods_this_tool_runs() -> None:
    shipped = {yaml.safe_load(p.read_text()).get("method") for p in (REPO / "conf" / "draft").glob("*.yaml")}
    assert shipped - {None} == set(methods.RUN) == {"eagle", "eagle3", "ngram", "ngram_gpu", "draft_model", "suffix"}
    assert all(methods.get(m).llama4 for m in methods.RUN)  # every method this tool runs applies to Llama 4


def test_labels_and_questions() -> None:
    assert [methods.label(n) for n in ("eagle", "eagle3", "ngram", None, "novel")] == [
        "EAGLE", "EAGLE-3", "n-gram", "no speculation", "novel"]
    assert methods.needs_model("eagle") and not methods.needs_model("ngram") and not methods.needs_model(None)
    assert methods.prompt_lookup("ngram") and methods.prompt_lookup("ngram_gpu") and not methods.prompt_lookup("eagle")
    assert methods.reads_hidden_states("eagle3") and not methods.reads_hidden_states("draft_model")
    assert [methods.draft_memory(n) for n in ("eagle", "eagle3", "draft_model", "ngram", "suffix", None)] == [
        "head", "head", "model", "", "", ""]
    assert methods.reads_draft_config("draft_model") and not methods.reads_draft_config("ngram")
    assert methods.async_scheduling(None) and methods.async_scheduling("draft_model")
    assert not methods.async_scheduling("ngram") and not methods.async_scheduling("suffix")


def test_the_suffix_requirement_is_the_one_vllm_names(speculative) -> None:
    """vLLM 0.32's own message names the arctic-inference version suffix decoding needs."""
    import inspect

    source = inspect.getsource(speculative.SpeculativeConfig._validate_suffix_decoding)
    assert f"pip install {methods.SUFFIX_PACKAGE}" in source
    assert methods.get("suffix").package == methods.SUFFIX_PACKAGE and methods.get("suffix").module == "arctic_inference"
    assert [m.name for m in methods.TABLE if m.gpu_only] == ["ngram_gpu"]


def test_a_method_this_tool_does_not_run_is_refused_naming_those_it_does(tiny_dir) -> None:
    from llama4spec.config.validate import validate

    problems = validate(compose_config(["draft.method=medusa"]).cfg)
    assert any("draft.method 'medusa' is not supported; use one of eagle, eagle3, ngram, ngram_gpu, draft_model, "
               "suffix" in p for p in problems), problems
