"""vLLM's ``prefix_repetition`` benchmark dataset (``bench.dataset_name=prefix_repetition``): its
flags and the rules that make a run of it what it says (pure).

vLLM 0.32 (``vllm/benchmarks/datasets/datasets.py``, ``PrefixRepetitionRandomDataset``) draws
``num_prefixes`` prefixes of random tokens and, for each, ``num_prompts // num_prefixes`` prompts
of that prefix + a suffix of their own; it fails when fewer prompts than prefixes are asked for and
sends fewer than asked when they are not a multiple. It takes no ``--dataset-path`` and reads no
``--input-len`` (a prompt is prefix + suffix tokens); ``--output-len`` sets its output length.
"""

from __future__ import annotations

from llama4spec.config.schema import Config

NAME = "prefix_repetition"
DEFAULTS = {"prefix_len": 256, "suffix_len": 256, "num_prefixes": 10}  # vLLM 0.32's
DEFAULT_OUTPUT_LEN = 128  # vLLM 0.32's, without --output-len


def given(cfg: Config) -> dict[str, int | None]:
    """``bench.prefix_repetition_<key>`` of each key, as the config gives it (None: unset)."""
    b = cfg.bench
    return {"prefix_len": b.prefix_repetition_prefix_len, "suffix_len": b.prefix_repetition_suffix_len,
            "num_prefixes": b.prefix_repetition_num_prefixes}


def setting(cfg: Config, key: str) -> int:
    """``bench.prefix_repetition_<key>`` as the run has it (vLLM's default where unset)."""
    value = given(cfg)[key]
    return DEFAULTS[key] if value is None else value


def flags(cfg: Config) -> list[str]:
    """The dataset's own flags (those the config sets), after ``--dataset-name prefix_repetition``."""
    out = []
    for key, value in given(cfg).items():
        if value is not None:
            out += [f"--{NAME.replace('_', '-')}-{key.replace('_', '-')}", str(value)]
    return out


def prompts_problems(cfg: Config, prompts: int, what: str) -> list[str]:
    """``prompts`` requests of one run (``what``: "bench.num_prompts=64", "warmup: 3") against the
    dataset's prefixes: at least one prompt per prefix, and a whole number of prompts per prefix."""
    if cfg.bench.dataset_name != NAME or not isinstance(prompts, int) or prompts < 1:
        return []
    n = setting(cfg, "num_prefixes")
    if not isinstance(n, int) or n < 1:
        return []  # its own problem
    if prompts % n:
        lower, higher = prompts // n * n, (prompts // n + 1) * n
        sends = f"vLLM would send {lower} ({prompts // n} per prefix)" if lower else "vLLM refuses it"
        return [f"{what}: prefix_repetition divides the prompts among bench.prefix_repetition_num_prefixes={n} "
                f"prefixes, and {prompts} is not a multiple of {n} ({sends}); give {higher}"
                + (f" or {lower}" if lower else "")]
    return []


def problems(cfg: Config) -> list[str]:
    """Every rule of the dataset's keys on ``cfg``: each key a whole number of at least 1 and read
    only by this dataset; no dataset path or input length, which it does not read; its prompts
    within ``memory.max_model_len``."""
    b, out = cfg.bench, []
    for key, value in given(cfg).items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            out.append(f"bench.{NAME}_{key}={value}: must be a whole number of at least 1")
        elif value is not None and b.dataset_name != NAME:
            out.append(f"bench.{NAME}_{key}={value} is read only by bench.dataset_name={NAME} (this bench's is "
                       f"{b.dataset_name}); drop it or set bench.dataset_name={NAME}")
    if b.dataset_name != NAME or out:
        return out
    if b.dataset_path is not None:
        out.append(f"bench.dataset_path={b.dataset_path}: vLLM's {NAME} dataset draws its own prompts and refuses "
                   f"a dataset path; set bench.dataset_path=null")
    if b.input_len is not None:
        out.append(f"bench.input_len={b.input_len} is not read by {NAME} (a prompt is prefix + suffix tokens); "
                   f"drop it and set bench.{NAME}_prefix_len and bench.{NAME}_suffix_len")
    length = setting(cfg, "prefix_len") + setting(cfg, "suffix_len") + (b.output_len or DEFAULT_OUTPUT_LEN)
    limit = cfg.memory.max_model_len
    if isinstance(limit, int) and length > limit:
        out.append(f"bench: a {NAME} request holds {length} tokens (prefix + suffix + output), beyond "
                   f"memory.max_model_len={limit}; shorten the prefix, the suffix or bench.output_len")
    sent = max(b.num_prompts, (b.prompts_per_concurrency or 0) * b.max_concurrency)  # engine.bench_flags.num_prompts
    return out + prompts_problems(cfg, sent, f"bench.num_prompts={sent}")
