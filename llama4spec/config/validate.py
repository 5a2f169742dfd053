"""One validation pass over a composed config: every problem at once, in the user's words.

The one place for config rules that need no model file (those of the prompt categories in ``categories``);
``validate``, ``serve``, ``offline``, ``run``, ``doctor`` and ``memory`` all go through it."""

from __future__ import annotations

import dataclasses
import math
import os
import re
from pathlib import Path

from llama4spec.config import methods, prefix_repetition
from llama4spec.config.categories import check_categories
from llama4spec.config.layout import host_problem, layout_problems
from llama4spec.config.schedule import schedule_problems
from llama4spec.config.schema import Config, SloConfig
from llama4spec.config.synthetic import synthetic_problems
from llama4spec.figures import SLO_METRICS  # vLLM's --goodput names (ttft, tpot, e2el)
from llama4spec.tiny.paths import is_tiny_path

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def looks_local(model: str) -> bool:
    """A model reference is a local directory when it is spelled as a path or exists as one."""
    if model.startswith(("/", "./", "../", "~")) or model in (".", ".."):
        return True
    return Path(model).exists() or not HUB_ID.match(model)


def _check_model(key: str, model: str | None, problems: list[str]) -> None:
    if not model or is_tiny_path(model):
        return  # tiny models are built on first use
    if looks_local(model):
        path = Path(model).expanduser()
        if not path.is_dir():
            problems.append(
                f"{key}: local model directory '{model}' does not exist; "
                f"give an existing directory or a hub id such as org/name"
            )
        elif not (path / "config.json").is_file():
            problems.append(f"{key}: '{model}' has no config.json; point it at a model directory")


# vLLM 0.32's accepted values (vllm/config/model.py ModelDType, vllm/config/cache.py CacheDType).
DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
KV_CACHE_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla",
                   "nvfp4_ds_mla", "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc",
                   "ultraquant_4bit", "int4_per_token_head", "int8_per_token_head", "fp8_per_token_head", "nvfp4",
                   "nvfp4_4over6")
MAX_LOOKAHEAD = 32
# Flags the tool sets itself from the config; repeating them in extra_args would contradict it.
OWN_SERVE_FLAGS = ("--host", "--port", "--model", "--speculative-config", "--api-key")


def _at_least(problems: list[str], key: str, value, low: float = 1, optional: bool = True) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low or value != value:
        problems.append(f"{key}={value}: must be at least {low:g}")


def _values(cfg: Config, problems: list[str]) -> None:
    """Every number and name that vLLM would reject, or that would make a run meaningless."""
    s, b, m, d = cfg.serve, cfg.bench, cfg.memory, cfg.draft
    if not 1 <= s.port <= 65535:
        problems.append(f"serve.port={s.port}: must be a port number (1-65535)")
    host = host_problem("serve.host", s.host)
    if host:
        problems.append(host)
    _at_least(problems, "serve.health_timeout_s", s.health_timeout_s, 1, optional=False)
    if s.engine_nice is not None and not (isinstance(s.engine_nice, int) and not isinstance(s.engine_nice, bool)
                                          and 0 <= s.engine_nice <= 19):
        problems.append(f"serve.engine_nice={s.engine_nice}: must be a nice value from 0 to 19 (higher runs the "
                        f"engine at lower priority), or null to leave it")
    elif s.engine_nice is not None and cfg.parallel.nnodes > 1:
        problems.append(f"serve.engine_nice={s.engine_nice} applies to a server on this machine, not to a group "
                        f"of {cfg.parallel.nnodes} nodes; drop it, or set the nice value on each node yourself")
    for arg in s.extra_args:
        flag = arg.split("=", 1)[0]
        if flag in OWN_SERVE_FLAGS:
            problems.append(f"serve.extra_args repeats {flag}, which llama4spec sets from the config; "
                            f"use {_own_flag_hint(flag)} instead")
    if s.api_key_env is not None and not os.environ.get(s.api_key_env):
        problems.append(f"serve.api_key_env={s.api_key_env}: that variable is unset or empty, so the server "
                        f"would start without its API key; export {s.api_key_env} or drop serve.api_key_env")
    if not 0 <= cfg.lookahead <= MAX_LOOKAHEAD:
        problems.append(f"lookahead={cfg.lookahead}: must be between 1 and {MAX_LOOKAHEAD}")
    if cfg.target.dtype not in DTYPES:
        problems.append(f"target.dtype '{cfg.target.dtype}' is not one of vLLM's: {', '.join(DTYPES)}")
    if m.kv_cache_dtype not in KV_CACHE_DTYPES:
        problems.append(f"memory.kv_cache_dtype '{m.kv_cache_dtype}' is not one of vLLM's: {', '.join(KV_CACHE_DTYPES)}")
    for key in ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "cpu_kvcache_space_gib"):
        _at_least(problems, f"memory.{key}", getattr(m, key))
    _at_least(problems, "draft.max_model_len", d.max_model_len)
    _at_least(problems, "bench.max_concurrency", b.max_concurrency, optional=False)
    _at_least(problems, "bench.num_prompts", b.num_prompts, optional=False)
    _at_least(problems, "bench.prompts_per_concurrency", b.prompts_per_concurrency)
    _at_least(problems, "bench.input_len", b.input_len)
    _at_least(problems, "bench.output_len", b.output_len)
    problems.extend(input_band_problems(b) + _speed_bench_problems(b))
    _sampling(cfg, problems)
    if str(b.request_rate) != "inf":
        try:
            rate = float(b.request_rate)
        except ValueError:
            rate = -1.0
        if not rate > 0 or rate != rate:
            problems.append(f"bench.request_rate={b.request_rate}: give requests per second (> 0) or inf")
    if b.burstiness is not None and not _positive(b.burstiness):
        problems.append(f"bench.burstiness={b.burstiness}: give the gamma shape of request arrivals (> 0; "
                        f"1 is Poisson), or drop it")
    problems.extend(slo_problems(cfg.slo) + prefix_repetition.problems(cfg))
    for key, value in cfg.env.items():
        if not isinstance(value, str):
            problems.append(f"env.{key}: values must be strings (got {value!r}); quote it")


SPEED_BENCH_SUBSETS = ("qualitative", "throughput_1k", "throughput_2k", "throughput_8k", "throughput_16k",
                      "throughput_32k")  # vLLM 0.32's --speed-bench-dataset-subset choices


def _speed_bench_problems(b) -> list[str]:
    if b.speed_bench_subset is None:
        return []
    if b.speed_bench_subset not in SPEED_BENCH_SUBSETS:
        return [f"bench.speed_bench_subset={b.speed_bench_subset}: one of vLLM's: {', '.join(SPEED_BENCH_SUBSETS)}"]
    if b.dataset_name != "speed_bench":
        return [f"bench.speed_bench_subset={b.speed_bench_subset} is a SPEED-Bench subset, and bench.dataset_name is "
                f"{b.dataset_name}; give bench.dataset_name=speed_bench or drop it"]
    return []


def input_band_problems(b) -> list[str]:
    """``bench.input_band``: LOW-HIGH prompt tokens (0 < LOW <= HIGH), of a prompt file (custom)."""
    if b.input_band is None:
        return []
    parts = str(b.input_band).split("-")
    if len(parts) != 2 or not all(x.isdigit() for x in parts) or not 0 < int(parts[0]) <= int(parts[1]):
        return [f"bench.input_band={b.input_band}: give LOW-HIGH prompt tokens with 0 < LOW <= HIGH (e.g. 17-48)"]
    if b.dataset_name != "custom" or not b.dataset_path:
        return [f"bench.input_band={b.input_band} selects a prompt file's prompts by token count, and "
                f"bench.dataset_name is {b.dataset_name}; give bench.dataset_name=custom and bench.dataset_path, "
                f"or bench.input_len for random prompts"]
    return []


def _positive(value) -> bool:
    """A finite number above 0 (not a bool)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and value > 0)


def slo_problems(slo: SloConfig) -> list[str]:
    """``slo``: positive finite thresholds (ms) and multipliers, an attainment in (0, 1], and an
    SLO in use (any option but ``none``, or any key of it set) that constrains something."""
    problems = []
    thresholds, multipliers = slo.thresholds(), slo.multipliers()
    for metric in SLO_METRICS:
        for key, value, what in ((f"{metric}_ms", thresholds.get(metric), "a time in milliseconds"),
                                 (metric, multipliers.get(metric), "a multiplier of the step's median")):
            if value is not None and not _positive(value):
                problems.append(f"slo.{key}={value}: give {what} greater than 0, or drop it")
        if metric in thresholds and metric in multipliers:
            problems.append(f"slo.{metric}_ms and slo.{metric} both bound {metric.upper()}; give one of them")
    a = slo.attainment
    if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 < a <= 1:
        problems.append(f"slo.attainment={a}: give the share of requests that must be good, in (0, 1], e.g. 0.95")
    ref = slo.relative_to
    if ref is not None and (not str(ref).strip() or not str(ref).isprintable() or any(c.isspace() for c in str(ref))):
        problems.append(f"slo.relative_to={ref!r}: give the id of a bench step (one word)")
    elif ref is not None and not multipliers:
        problems.append(f"slo.relative_to={ref}: give a multiplier of that step's medians, "
                        f"e.g. slo.ttft=3.0 slo.tpot=1.5")
    if ref is None and multipliers:
        metric, value = next(iter(multipliers.items()))
        problems.append(f"slo.{metric}={value} multiplies a bench step's median; name the step with "
                        f"slo.relative_to=STEP, or give slo.{metric}_ms instead")
    if slo.name != "none" and not thresholds and ref is None and not multipliers:
        problems.append(f"slo={slo.name} sets no threshold; give slo.ttft_ms, slo.tpot_ms or slo.e2el_ms "
                        f"(milliseconds), or slo.relative_to=STEP with multipliers, or use slo=none")
    return problems


DRAFT_SAMPLE_METHODS = ("greedy", "probabilistic")
MAX_TEMPERATURES = 16


def _sampling(cfg: Config, problems: list[str]) -> None:
    """The temperatures (bench's, generation's, offline's) and how the draft samples."""
    b, g, d = cfg.bench, cfg.generation, cfg.draft
    for key, t in (("bench.temperature", b.temperature), ("generation.temperature", g.temperature)):
        if t < 0:  # NaN and infinity: the walk over every number refuses them (``_finite``)
            problems.append(f"{key}={t}: temperature must be 0 (greedy) or positive")
    _temperatures(cfg.offline.temperatures, problems)
    if cfg.offline.temperatures and cfg.offline.by_category:
        problems.append("offline.temperatures and offline.by_category=true each split the batch; use one of them")
    if cfg.offline.temperatures and g.temperature > 0:  # 0: the default, which says nothing either way
        problems.append(f"generation.temperature={g.temperature:g} is not used where offline.temperatures (lossless: "
                        f"--temperatures) sets the temperatures, every prompt at each of them; drop "
                        f"generation.temperature, or add {g.temperature:g} to those")
    if d.sample_method is not None:
        if d.sample_method not in DRAFT_SAMPLE_METHODS:
            problems.append(f"draft.sample_method={d.sample_method}: must be one of vLLM's draft_sample_method "
                            f"values: {', '.join(DRAFT_SAMPLE_METHODS)}")
        elif not methods.needs_model(d.method):
            drafters = " or ".join(m for m in methods.RUN if methods.needs_model(m))
            problems.append(f"draft.sample_method={d.sample_method}: only a model draft samples "
                            f"(draft.method {drafters}, not {d.method or 'none'}); drop draft.sample_method")


def _temperatures(values: list, problems: list[str]) -> None:
    """``offline.temperatures``: distinct finite values >= 0, a few of them (each is a batch share)."""
    if len(values) > MAX_TEMPERATURES:
        problems.append(f"offline.temperatures has {len(values)} values; give at most {MAX_TEMPERATURES}")
        return
    for t in values:  # NaN and infinity: the walk over every number refuses them
        if isinstance(t, bool) or not isinstance(t, (int, float)) or t < 0:
            problems.append(f"offline.temperatures: {t} is no temperature; give values of 0 (greedy) or more")
            return
    if len(set(values)) != len(values):
        problems.append("offline.temperatures repeats a value; give each temperature once")


def _own_flag_hint(flag: str) -> str:
    return {"--host": "serve.host=ADDR", "--port": "serve.port=N", "--model": "target.model=...",
            "--speculative-config": "draft=... and lookahead=N",
            "--api-key": "serve.api_key_env=VAR (the key is read from that variable, never put on argv)"}[flag]


# Strings with their own rule (and message) elsewhere in this module or in layout.py.
OWN_TEXT_RULES = ("serve.host", "target.revision", "draft.revision")


def _walk(node, key: str = ""):
    """(dotted key, value) of every leaf of the typed config: dataclass fields and list items
    (mappings such as env hold free text: not walked)."""
    if dataclasses.is_dataclass(node):
        for f in dataclasses.fields(node):
            yield from _walk(getattr(node, f.name), f"{key}.{f.name}" if key else f.name)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _walk(item, f"{key}.{i}")
    elif not isinstance(node, dict):
        yield key, node


def _leaves(cfg: Config, problems: list[str]) -> None:
    """Every number is finite (JSON, vLLM and every comparison need it) and no text is empty (an
    empty host, model or name is never a default): one line per value."""
    for key, value in _walk(cfg):
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(f"{key}={value}: must be a finite number")
        elif isinstance(value, str) and not value.strip() and key not in OWN_TEXT_RULES \
                and not key.startswith("cluster.hosts."):
            problems.append(f"{key} is empty; give a value (or null where the key may be unset)")


MAX_REVISION = 255


def _check_revision(key: str, revision, problems: list[str]) -> None:
    """A hub commit, branch or tag: one word as git and the hub spell them, never read as a flag."""
    if revision is None:
        return
    text = str(revision)
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:80])  # a one-line message
    example = f"e.g. {key}=main or a 40-character commit hash"
    if not text.strip():
        problems.append(f"{key} is empty; give a commit, branch or tag ({example}), or drop it")
    elif any(c.isspace() for c in text) or not text.isprintable():
        problems.append(f"{key} '{shown}' contains a space or control character; give one commit, branch or "
                        f"tag ({example})")
    elif text.startswith("-"):
        problems.append(f"{key} '{shown}' starts with '-' (it would read as a flag); give a commit, branch or "
                        f"tag ({example})")
    elif len(text) > MAX_REVISION:
        problems.append(f"{key} is {len(text)} characters long; a commit, branch or tag has at most {MAX_REVISION}")


def _noise_prior(cfg: Config, problems: list[str]) -> None:
    """hardware.noise: unset, or log-sds of 0 or more (below 1), df above 0 and a source."""
    n = cfg.hardware.noise
    if all(getattr(n, k) is None for k in ("between_sd", "between_df", "within_sd", "within_df")) and not n.source:
        return
    for key in ("between_sd", "within_sd"):
        v = getattr(n, key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
            problems.append(f"hardware.noise.{key}={v}: give a log-sd between 0 and 1 (0.13 is about 13%)")
    for key in ("between_df", "within_df"):
        v = getattr(n, key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            problems.append(f"hardware.noise.{key}={v}: give the degrees of freedom it was measured with (above 0)")
    if not (n.source or "").strip():
        problems.append("hardware.noise.source is empty; name the measurement the figures came from")


def _draft(cfg: Config, problems: list[str]) -> None:
    """The draft's method, the lookahead it needs, its model and its prompt-lookup bounds."""
    d = cfg.draft
    if d.method is not None and d.method not in methods.RUN:
        problems.append(f"draft.method '{d.method}' is not supported; use one of {', '.join(methods.RUN)} or draft=none")
    if d.method is not None and cfg.lookahead < 1:
        problems.append(
            f"lookahead={cfg.lookahead}: a draft needs at least 1 speculative token; set lookahead>=1 or draft=none"
        )
    if methods.needs_model(d.method):
        if not d.model:
            problems.append(f"draft.model: method {d.method} needs a draft model (hub id or local directory)")
        _check_model("draft.model", d.model, problems)
    if methods.prompt_lookup(d.method):
        lo, hi = d.prompt_lookup_min, d.prompt_lookup_max
        if lo is None or hi is None or lo < 1 or hi < lo:
            problems.append(
                f"draft: {d.method} needs 1 <= prompt_lookup_min <= prompt_lookup_max (got {lo}, {hi})"
            )


def validate(cfg: Config) -> list[str]:
    """The config rules that need no model: every problem at once. Rules that read a model's
    config.json (heads, vocabulary, positions, chunked attention) live in the doctor."""
    problems: list[str] = []
    _noise_prior(cfg, problems)
    d, p, t = cfg.draft, cfg.parallel, cfg.target
    _check_model("target.model", t.model, problems)
    _check_revision("target.revision", t.revision, problems)
    _check_revision("draft.revision", d.revision, problems)
    _draft(cfg, problems)
    for key, value in (("tensor_parallel_size", p.tensor_parallel_size), ("pipeline_parallel_size", p.pipeline_parallel_size), ("nnodes", p.nnodes)):
        if value < 1:
            problems.append(f"parallel.{key}={value}: must be at least 1")
    tp = p.tensor_parallel_size
    if d.method is not None and p.draft_tensor_parallel_size is not None and p.draft_tensor_parallel_size not in (1, tp):
        problems.append(
            f"parallel.draft_tensor_parallel_size={p.draft_tensor_parallel_size}: vLLM needs 1 or the "
            f"target's tensor_parallel_size ({tp})"
        )
    elif (methods.draft_memory(d.method) == "model" and p.draft_tensor_parallel_size is not None
          and p.draft_tensor_parallel_size != tp):
        problems.append(
            f"parallel.draft_tensor_parallel_size={p.draft_tensor_parallel_size}: vLLM 0.32 runs a draft model "
            f"(draft.method={d.method}) only at the target's tensor_parallel_size ({tp}); drop the key or set it to {tp}"
        )
    m = cfg.memory
    if m.gpu_memory_utilization is not None and not 0 < m.gpu_memory_utilization <= 1:
        problems.append(f"memory.gpu_memory_utilization={m.gpu_memory_utilization}: must be in (0, 1]")
    _values(cfg, problems)
    if d.lookahead_schedule is not None:
        if d.method is None:
            problems.append("draft.lookahead_schedule needs a draft; name one (draft=...) or drop the schedule")
        else:
            problems.extend(schedule_problems(d.lookahead_schedule, cfg.lookahead))
    problems.extend(synthetic_problems(d, cfg.lookahead) + methods.block_drop_problems(d.method, d.disable_eagle_block_drop))
    _at_least(problems, "parallel.data_parallel_size", p.data_parallel_size, optional=False)
    check_categories(cfg, problems)
    _leaves(cfg, problems)
    problems.extend(layout_problems(cfg))
    if cfg.dataset.name == "jsonl" and cfg.dataset.path in (None, "???"):
        problems.append("dataset=jsonl needs a file: add dataset.path=FILE (one {\"prompt\": ...} per line)")
    elif cfg.dataset.name == "jsonl" and not Path(cfg.dataset.path).is_file():
        problems.append(f"dataset.path: JSONL file '{cfg.dataset.path}' does not exist")
    if cfg.dataset.num_prompts < 1:
        problems.append(f"dataset.num_prompts={cfg.dataset.num_prompts}: must be at least 1")
    if cfg.generation.max_tokens < 1:
        problems.append(f"generation.max_tokens={cfg.generation.max_tokens}: must be at least 1")
    return problems
