"""The losslessness check's engines: one with the draft, one without (when the check needs it),
each started once, each batch one ``generate`` call. What the runs found becomes a
``record.LosslessRecord``; the statistics are ``stats``.

- With the draft: every prompt greedily, then ``samples`` requests at each temperature above 0
  (prompt ``i mod prompts``), each request with a seed of its own (``offline.run.request_seed``).
- Without the draft (when temperature 0 is checked, or a temperature above 0 on a target whose
  distribution is not known exactly): every prompt greedily with the top-2 logprobs, all in one
  batch (the target's own output), then the same prompts one at a time in reverse order (another
  batch shape and order: the engine's own divergence), then (two-sample test) the sampled
  requests again, with seeds after all of the draft run's, so the two samples are independent.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from llama4spec.config.schema import Config
from llama4spec.engine.args import engine_env, llm_kwargs
from llama4spec.errors import UserError
from llama4spec.lossless.exact import exact_target
from llama4spec.lossless.settings import Settings
from llama4spec.offline.prompts import load_prompts
from llama4spec.offline.run import engine_error, engine_noise, request_seed, stderr_to, without_draft

Starting = Callable[[str], contextlib.AbstractContextManager]  # label -> held while that engine starts


@dataclass(frozen=True)
class Sampled:
    """The requests above temperature 0: (prompt index, temperature, seed) each."""

    prompt: int
    temperature: float
    seed: int


def sampled_requests(settings: Settings, seed: int, prompts: int) -> list[Sampled]:
    """``settings.samples`` requests per temperature above 0, prompts in turn, each its own seed (after
    the greedy requests' indices, so no two requests of the batch share one)."""
    hot = [t for t in settings.temperatures if t > 0]
    return [Sampled(n % prompts, t, request_seed(seed, prompts + i * settings.samples + n))
            for i, t in enumerate(hot) for n in range(settings.samples)]


def needs_baseline(cfg: Config, settings: Settings) -> bool:
    """Whether the check runs the target without the draft: for temperature 0, and for a temperature
    above 0 on a target whose distribution is not known exactly."""
    hot = any(t > 0 for t in settings.temperatures)
    return 0.0 in settings.temperatures or (hot and exact_target(cfg.target.model) is None)


@dataclass
class Outputs:
    """What the engines returned, token ids per request."""

    greedy: list[list[int]] = field(default_factory=list)  # with the draft
    sampled: list[list[int]] = field(default_factory=list)  # with the draft, ``sampled_requests`` order
    target: list[list[int]] = field(default_factory=list)  # without the draft, one batch
    gaps: list[list[float | None]] = field(default_factory=list)  # ``target``'s top-2 logprob gap per position
    reordered: list[list[int]] = field(default_factory=list)  # without the draft, one at a time, back in prompt order
    target_sampled: list[list[int]] = field(default_factory=list)  # without the draft, ``sampled_requests`` order
    engine_start_s: list[float] = field(default_factory=list)


@contextlib.contextmanager
def engine(cfg: Config, label: str, starting: Starting, verbosity: int, starts: list[float]) -> Iterator[Any]:
    """A vLLM ``LLM`` for ``cfg``, shut down on exit; its start-up noise in a log unless -v."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO" if verbosity > 0 else "ERROR")
    for key, value in engine_env(cfg).items():
        os.environ[key] = value
    with engine_noise(verbosity) as log:
        if log is not None:
            os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
        start = time.perf_counter()
        try:
            with starting(label), stderr_to(log):
                from vllm import LLM

                llm = LLM(**llm_kwargs(cfg))
        except Exception as error:
            raise UserError(f"vLLM could not start the {label} engine: {engine_error(error)}") from None
        starts.append(time.perf_counter() - start)
        try:
            yield llm
        finally:
            llm.llm_engine.engine_core.shutdown()
            del llm
            gc.collect()
            if log is not None:
                log.unlink(missing_ok=True)


def _texts(llm: Any, prompts) -> list[str]:
    if not prompts.chat:
        return list(prompts.texts)
    tok = llm.get_tokenizer()
    return [tok.apply_chat_template([{"role": "user", "content": t}], tokenize=False, add_generation_prompt=True)
            for t in prompts.texts]


def _gaps(logprobs: Any) -> list[float | None]:
    from llama4spec.lossless.stats import top2_gap

    return [top2_gap([lp.logprob for lp in step.values()]) if step else None for step in (logprobs or [])]


def run_engines(cfg: Config, settings: Settings, starting: Starting, verbosity: int = 0) -> tuple[Outputs, Any]:
    """Start the engines and generate; (what they returned, the prompts)."""
    from vllm import SamplingParams

    prompts = load_prompts(cfg.dataset)
    g = cfg.generation
    n = len(prompts.texts)
    hot = sampled_requests(settings, g.seed, n)
    greedy = [SamplingParams(max_tokens=g.max_tokens, temperature=0.0, ignore_eos=g.ignore_eos,
                             seed=request_seed(g.seed, i)) for i in range(n)]
    cold = n if 0.0 in settings.temperatures else 0  # greedy requests with the draft
    sampling = [SamplingParams(max_tokens=g.max_tokens, temperature=r.temperature, ignore_eos=g.ignore_eos,
                               seed=r.seed) for r in hot]
    # without the draft (two-sample test): the same prompts and temperatures, seeds of their own
    base_sampling = [SamplingParams(max_tokens=g.max_tokens, temperature=r.temperature, ignore_eos=g.ignore_eos,
                                    seed=request_seed(g.seed, n + len(hot) + j)) for j, r in enumerate(hot)]
    out = Outputs()
    label = f"{cfg.draft.name} k={cfg.lookahead}"
    with engine(cfg, label, starting, verbosity, out.engine_start_s) as llm:
        texts = _texts(llm, prompts)
        done = llm.generate(texts[:cold] + [texts[r.prompt] for r in hot], greedy[:cold] + sampling, use_tqdm=False)
        ids = [list(o.outputs[0].token_ids) for o in done]
        out.greedy, out.sampled = ids[:cold], ids[cold:]
    if not needs_baseline(cfg, settings):
        return out, prompts
    base_cfg = without_draft(cfg)
    with engine(base_cfg, "no draft", starting, verbosity, out.engine_start_s) as llm:
        texts = _texts(llm, prompts)
        if not cold:
            done = llm.generate([texts[r.prompt] for r in hot], base_sampling, use_tqdm=False)
            out.target_sampled = [list(o.outputs[0].token_ids) for o in done]
            return out, prompts
        logged = [SamplingParams(max_tokens=g.max_tokens, temperature=0.0, ignore_eos=g.ignore_eos,
                                 seed=request_seed(g.seed, i), logprobs=2) for i in range(n)]
        done = llm.generate(texts, logged, use_tqdm=False)
        out.target = [list(o.outputs[0].token_ids) for o in done]
        out.gaps = [_gaps(o.outputs[0].logprobs) for o in done]
        reordered: list[list[int]] = [[] for _ in range(n)]
        for i in reversed(range(n)):  # one request at a time, last prompt first
            one = llm.generate([texts[i]], [greedy[i]], use_tqdm=False)
            reordered[i] = list(one[0].outputs[0].token_ids)
        out.reordered = reordered
        if hot and exact_target(cfg.target.model) is None:
            done = llm.generate([texts[r.prompt] for r in hot], base_sampling, use_tqdm=False)
            out.target_sampled = [list(o.outputs[0].token_ids) for o in done]
    return out, prompts


def check(composed: Any, settings: Settings, starting: Starting, verbosity: int = 0):
    """Run the check for a composed config (a draft is set: the step checked it); the record."""
    from llama4spec.lossless import check as verdicts, stats
    from llama4spec.lossless.record import LosslessRecord
    from llama4spec.results.provenance import model_revisions, public_config, versions

    cfg = composed.cfg
    out, prompts = run_engines(cfg, settings, starting, verbosity)
    kind = exact_target(cfg.target.model)
    tests = verdicts.tests_of(settings, kind)
    level = stats.joint_level(settings.level, tests)
    greedy = None
    if 0.0 in settings.temperatures:
        greedy = verdicts.greedy(out.greedy, out.target, out.reordered, out.gaps, settings, level)
    sampled = []
    hot = sampled_requests(settings, cfg.generation.seed, len(prompts.texts))
    for t in [t for t in settings.temperatures if t > 0]:
        mine = [i for i, r in enumerate(hot) if r.temperature == t]
        spec = [out.sampled[i] for i in mine]
        if kind is not None:
            test = verdicts.exact_test(kind, t, spec, level, seed=cfg.generation.seed)
        else:
            test = verdicts.two_sample_test(t, spec, [out.target_sampled[i] for i in mine], level)
        test.outputs = [{"prompt": hot[i].prompt, "seed": hot[i].seed, "token_ids": out.sampled[i]} for i in mine]
        sampled.append(test)
    return LosslessRecord(
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), versions=versions(), models=model_revisions(cfg),
        overrides=list(composed.overrides), config=public_config(composed.raw), target=cfg.target.name,
        draft=cfg.draft.name, lookahead=cfg.lookahead, prompts=prompts.source, settings=settings, tests=tests,
        greedy=greedy, sampled=sampled, engine_start_s=out.engine_start_s)
