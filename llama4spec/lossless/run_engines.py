"""The losslessness check's engines. What they returned becomes a ``record.LosslessRecord``; the
statistics are ``check``, ``conditioned`` and ``stats``.

- The draft's side, a local engine with the draft (or, ``settings.url``, a running server sent
  seeded completions): every prompt greedily, then ``samples`` requests at each temperature above 0
  (prompt ``i mod prompts``), each request with a seed of its own (``offline.run.request_seed``).
- The target alone, an engine without the draft: every prompt greedily with the top-2 logprobs, all
  in one batch (the target's own output), then one at a time in reverse order (another batch shape
  and order: the engine's own divergence); above 0, the control run (the same requests, seeds after
  all of the draft's, so the two runs are independent), then prompt + output of every sampled
  request of both runs scored (raw prompt logprobs: the reference of the context-conditioned test).
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
from llama4spec.lossless.processed import Context
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


@dataclass
class Outputs:
    """What the engines returned, token ids per request, and the scored contexts."""

    greedy: list[list[int]] = field(default_factory=list)  # with the draft
    sampled: list[list[int]] = field(default_factory=list)  # with the draft, ``sampled_requests`` order
    prompt_ids: list[list[int]] = field(default_factory=list)  # each prompt's token ids
    target: list[list[int]] = field(default_factory=list)  # without the draft, one batch
    gaps: list[list[float | None]] = field(default_factory=list)  # ``target``'s top-2 logprob gap per position
    reordered: list[list[int]] = field(default_factory=list)  # without the draft, one at a time, back in prompt order
    control: list[list[int]] = field(default_factory=list)  # without the draft, ``sampled_requests`` order
    scored: list[list[Context]] = field(default_factory=list)  # ``sampled``'s tokens after the first, scored
    control_scored: list[list[Context]] = field(default_factory=list)  # ``control``'s, scored
    engine_start_s: list[float] = field(default_factory=list)


@contextlib.contextmanager
def engine(cfg: Config, label: str, starting: Starting, verbosity: int, starts: list[float],
           extra: dict[str, Any] | None = None) -> Iterator[Any]:
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

                llm = LLM(**{**llm_kwargs(cfg), **(extra or {})})
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


def _params(g: Any, settings: Settings, temperature: float, seed: int, logprobs: int | None = None) -> Any:
    from vllm import SamplingParams

    hot = temperature > 0
    return SamplingParams(max_tokens=g.max_tokens, temperature=temperature, ignore_eos=g.ignore_eos, seed=seed,
                          top_p=settings.top_p if hot else 1.0, top_k=settings.top_k if hot else -1, logprobs=logprobs)


def _ids(done: Any) -> list[list[int]]:
    return [list(o.outputs[0].token_ids) for o in done]


class Plan:
    """The requests of one check: prompts, the greedy and the sampled ones, the control's seeds."""

    def __init__(self, cfg: Config, settings: Settings, prompts: Any) -> None:
        g = cfg.generation
        self.g, self.settings, self.n = g, settings, len(prompts.texts)
        self.hot = sampled_requests(settings, g.seed, self.n)
        self.cold = self.n if 0.0 in settings.temperatures else 0  # greedy requests with the draft

    def greedy(self, i: int, logprobs: int | None = None) -> Any:
        return _params(self.g, self.settings, 0.0, request_seed(self.g.seed, i), logprobs)

    def sampled(self) -> list[Any]:
        return [_params(self.g, self.settings, r.temperature, r.seed) for r in self.hot]

    def control(self) -> list[Any]:
        """The same requests without the draft, seeds after all of the draft run's."""
        base = self.n + len(self.hot)
        return [_params(self.g, self.settings, r.temperature, request_seed(self.g.seed, base + j))
                for j, r in enumerate(self.hot)]


def _draft_local(cfg: Config, plan: Plan, prompts: Any, out: Outputs, starting: Starting, verbosity: int) -> None:
    label = f"{cfg.draft.name} k={cfg.lookahead}"
    with engine(cfg, label, starting, verbosity, out.engine_start_s) as llm:
        texts = _texts(llm, prompts)
        done = llm.generate(texts[:plan.cold] + [texts[r.prompt] for r in plan.hot],
                            [plan.greedy(i) for i in range(plan.cold)] + plan.sampled(), use_tqdm=False)
        ids = _ids(done)
        out.greedy, out.sampled = ids[:plan.cold], ids[plan.cold:]
        out.prompt_ids = [[] for _ in texts]  # as the engine tokenized them (what the scoring must see)
        for prompt, result in zip(list(range(plan.cold)) + [r.prompt for r in plan.hot], done):
            out.prompt_ids[prompt] = list(result.prompt_token_ids)


def _draft_served(cfg: Config, plan: Plan, out: Outputs) -> None:
    """The draft's side from the server at ``settings.url``: the prompts as the target's token ids."""
    from llama4spec.engine.secrets import api_key_env
    from llama4spec.lossless import served

    s, g = plan.settings, plan.g
    model = cfg.serve.served_model_name or cfg.target.model
    key = api_key_env(cfg.serve.api_key_env, "KEY").get("KEY")
    asks = [served.Request(out.prompt_ids[i], g.max_tokens, 0.0, 1.0, -1, request_seed(g.seed, i), g.ignore_eos)
            for i in range(plan.cold)]
    asks += [served.Request(out.prompt_ids[r.prompt], g.max_tokens, r.temperature, s.top_p, s.top_k, r.seed,
                            g.ignore_eos) for r in plan.hot]
    ids = served.generate(s.url or "", model, asks, key)
    out.greedy, out.sampled = ids[:plan.cold], ids[plan.cold:]


def _target_greedy(llm: Any, plan: Plan, texts: list[str], out: Outputs) -> None:
    done = llm.generate(texts, [plan.greedy(i, logprobs=2) for i in range(plan.n)], use_tqdm=False)
    out.target = _ids(done)
    out.gaps = [_gaps(o.outputs[0].logprobs) for o in done]
    reordered: list[list[int]] = [[] for _ in range(plan.n)]
    for i in reversed(range(plan.n)):  # one request at a time, last prompt first
        one = llm.generate([texts[i]], [plan.greedy(i)], use_tqdm=False)
        reordered[i] = list(one[0].outputs[0].token_ids)
    out.reordered = reordered


def _score(llm: Any, plan: Plan, out: Outputs) -> None:
    """Prompt + output of every sampled request of both runs, scored by the target alone."""
    from llama4spec.lossless.scoring import Scored, score

    for name, runs in (("scored", out.sampled), ("control_scored", out.control)):
        got: list[list[Context]] = [[] for _ in runs]
        for t in sorted({r.temperature for r in plan.hot}):
            mine = [i for i, r in enumerate(plan.hot) if r.temperature == t]
            items = [Scored(out.prompt_ids[plan.hot[i].prompt], runs[i]) for i in mine]
            for i, contexts in zip(mine, score(llm, items, plan.settings.sampling(t))):
                got[i] = contexts
        setattr(out, name, got)


def run_engines(cfg: Config, settings: Settings, starting: Starting, verbosity: int = 0) -> tuple[Outputs, Any]:
    """Start the engines (or ask the server) and generate; (what they returned, the prompts)."""
    from llama4spec.lossless.scoring import FULL_VOCAB

    prompts = load_prompts(cfg.dataset)
    plan = Plan(cfg, settings, prompts)
    out = Outputs()
    if settings.url is None:
        _draft_local(cfg, plan, prompts, out, starting, verbosity)
    extra = {"max_logprobs": FULL_VOCAB} if plan.hot else {}
    with engine(without_draft(cfg), "no draft", starting, verbosity, out.engine_start_s, extra) as llm:
        texts = _texts(llm, prompts)
        if settings.url is not None:
            tok = llm.get_tokenizer()
            out.prompt_ids = [list(tok.encode(t)) for t in texts]
            _draft_served(cfg, plan, out)
        if plan.cold:
            _target_greedy(llm, plan, texts, out)
        if plan.hot:
            out.control = _ids(llm.generate([texts[r.prompt] for r in plan.hot], plan.control(), use_tqdm=False))
            _score(llm, plan, out)
    return out, prompts


def _sampled_tests(cfg: Config, settings: Settings, out: Outputs, hot: list[Sampled], level: float) -> list[Any]:
    from llama4spec.lossless import check as verdicts

    kind = exact_target(cfg.target.model)
    tests = []
    for t in [t for t in settings.temperatures if t > 0]:
        mine = [i for i, r in enumerate(hot) if r.temperature == t]
        draft = [c for i in mine for c in out.scored[i]]
        control = [c for i in mine for c in out.control_scored[i]]
        test = verdicts.context_test(settings, t, draft, control, len(mine), level, seed=cfg.generation.seed)
        test.outputs = [{"prompt": hot[i].prompt, "seed": hot[i].seed, "token_ids": out.sampled[i]} for i in mine]
        tests.append(test)
        if kind is not None:  # the tiny target's exact distribution: the cross-check on the same outputs
            tests.append(verdicts.exact_test(kind, settings, t, [out.sampled[i] for i in mine], level,
                                             seed=cfg.generation.seed))
    return tests


def check(composed: Any, settings: Settings, starting: Starting, verbosity: int = 0):
    """Run the check for a composed config (a draft is set: the step checked it); the record."""
    from llama4spec.lossless import check as verdicts, stats
    from llama4spec.lossless.record import LosslessRecord
    from llama4spec.results.provenance import model_revisions, public_config, versions

    cfg = composed.cfg
    out, prompts = run_engines(cfg, settings, starting, verbosity)
    tests = verdicts.tests_of(settings, exact_target(cfg.target.model))
    level = stats.joint_level(settings.level, tests)
    greedy = None
    if 0.0 in settings.temperatures:
        greedy = verdicts.greedy(out.greedy, out.target, out.reordered, out.gaps, settings, level)
    hot = sampled_requests(settings, cfg.generation.seed, len(prompts.texts))
    sampled = _sampled_tests(cfg, settings, out, hot, level)
    return LosslessRecord(
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), versions=versions(), models=model_revisions(cfg),
        overrides=list(composed.overrides), config=public_config(composed.raw), target=cfg.target.name,
        draft=cfg.draft.name, lookahead=cfg.lookahead, prompts=prompts.source, settings=settings, tests=tests,
        greedy=greedy, sampled=sampled, engine_start_s=out.engine_start_s)
