"""The ``bands:`` key of a sweep (and of a capacity step): its points banded by input length (prompt
tokens), each band measured by a benchmark of its own (a capacity step: a search of its own on the
same server) and analysed on its own (``analysis.bands``, ``capacity.bands``).

- ``bands: [16, 64, 256]``: random prompts (``bench=random_tiny``), each band one input length
  (``bench.input_len``);
- ``bands: [[1, 16], [17, 48], [49, 128]]``: a prompt file (``bench.dataset_name=custom``), each band
  its prompts of LOW to HIGH tokens by the target's tokenizer (``bench.input_band``);
- ``bands: [throughput_1k, throughput_8k]``: vLLM's SPEED-Bench throughput subsets
  (``bench.dataset_name=speed_bench``, ``bench.speed_bench_subset``), each about that many tokens, from
  the directory NVIDIA's script prepares (vLLM does not download it); their output length is vLLM's
  4,096 unless ``bench.output_len`` says otherwise (the dry run says both).

The bands become a client axis of the matrix (``check``: counted with the points), so every server is
measured in every band. Planned with the composed config (``config_problems``), each one line: bands
that overlap or are empty, a band beyond the server's ``max_model_len`` with the output length, a band
with fewer distinct prompts than a verdict over it needs.
"""

from __future__ import annotations

from typing import Any

from llama4spec.engine.bench_flags import num_prompts

MAX_BANDS = 16
MAX_TOKENS = 10_000_000
# A band's verdict rests on distinct prompts: at least this many, and one per client slot at the
# sweep's highest concurrency (so no slot repeats another's prompt while they run together).
MIN_BAND_PROMPTS = 4
LENGTH, BAND, SPEED = "bench.input_len", "bench.input_band", "bench.speed_bench_subset"
# SPEED-Bench's throughput subsets, each about this many input tokens; vLLM's default output length for them
SPEED_SUBSETS = {f"throughput_{n}k": 1024 * n for n in (1, 2, 8, 16, 32)}
SPEED_OUTPUT = 4096
SPEED_SCRIPT = ("curl -LsSf https://raw.githubusercontent.com/NVIDIA-NeMo/Skills/refs/heads/main/nemo_skills/"
                "dataset/speed-bench/prepare.py | python3 -")


def _band(item: Any) -> tuple[int, int] | str:
    """An item as (low, high), or what is wrong with it."""
    if isinstance(item, str) and item in SPEED_SUBSETS:
        return SPEED_SUBSETS[item], SPEED_SUBSETS[item]
    if isinstance(item, int) and not isinstance(item, bool):
        item = [item, item]
    if (not isinstance(item, list) or len(item) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in item)):
        return f"{item!r} is neither a length (64), [LOW, HIGH] tokens nor a SPEED-Bench throughput subset"
    low, high = item
    if not 0 < low <= MAX_TOKENS or not 0 < high <= MAX_TOKENS:
        return f"{item!r}: token counts lie in 1..{MAX_TOKENS:,}"
    if low > high:
        return f"[{low}, {high}] is empty (LOW above HIGH)"
    return low, high


def read(raw: dict, key: str, at: str, problems: list[str]) -> list[Any] | None:
    """The ``bands`` key as written (ints and [LOW, HIGH] pairs), checked: a list of 2 to MAX_BANDS
    bands, none empty, none overlapping another. None when absent or refused."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not 2 <= len(value) <= MAX_BANDS:
        problems.append(f"{at}: bands: give 2 to {MAX_BANDS} input-length bands, e.g. [16, 64, 256] (random "
                        f"prompts) or [[1, 16], [17, 48]] (a prompt file's prompts of that many tokens)")
        return None
    found = [_band(item) for item in value]
    bad = [f for f in found if isinstance(f, str)]
    if bad:
        problems.extend(f"{at}: bands: {b}" for b in bad)
        return None
    if 0 < sum(isinstance(x, str) for x in value) < len(value):
        problems.append(f"{at}: bands: give SPEED-Bench subsets or token counts, not both")
        return None
    spans = sorted(found)
    for (lo1, hi1), (lo2, hi2) in zip(spans, spans[1:]):
        if lo2 <= hi1:
            problems.append(f"{at}: bands: {_text(lo1, hi1)} and {_text(lo2, hi2)} overlap; give bands that "
                            f"share no length")
            return None
    return value


def _text(low: int, high: int) -> str:
    return f"{low}" if low == high else f"[{low}, {high}]"


def spans(bands: list[Any]) -> list[tuple[int, int]]:
    return sorted(b for b in map(_band, bands) if not isinstance(b, str))


def axis(bands: list[Any]) -> tuple[str, list[str]]:
    """The client axis the bands become: input lengths, or LOW-HIGH bands of a prompt file."""
    found = spans(bands)
    if all(isinstance(b, str) for b in bands):
        return SPEED, sorted(bands, key=SPEED_SUBSETS.get)
    if all(isinstance(b, int) for b in bands):
        return LENGTH, [str(low) for low, _ in found]
    return BAND, [f"{low}-{high}" for low, high in found]


def add_axis(keys: Any, at: str, problems: list[str]) -> None:
    """The bands as a client axis of the sweep's matrix (refused beside a band key in it)."""
    if not keys.bands or not keys.matrix or not isinstance(keys.matrix, dict):
        return
    key, values = axis(keys.bands)
    taken = [k for k in (LENGTH, BAND, SPEED) if k in keys.matrix]
    if taken == [key] and keys.matrix[key] == values:  # added before (a runbook written back from its plan)
        return
    if taken:
        problems.append(f"{at}: bands: sets {', '.join(taken)} per band, and the matrix sweeps it too; drop one")
        return
    keys.matrix = {**keys.matrix, key: values}


def _largest(matrix: dict[str, list[str]], key: str, default: int | None) -> int | None:
    values = [int(v) for v in matrix.get(key, []) if str(v).isdigit()]
    return max(values) if values else default


def _dataset_problem(cfg: Any, key: str) -> str | None:
    b = cfg.bench
    if key == SPEED or b.dataset_name == "speed_bench":
        return None if key == SPEED and b.dataset_name == "speed_bench" else (
            "SPEED-Bench subsets are bands of bench.dataset_name=speed_bench (its directory in bench.dataset_path), "
            "and only they are")
    if b.dataset_name == "random":
        return None if key == LENGTH else (
            "random prompts have one length a band: give lengths (bands: [16, 64, 256]), each a benchmark at "
            "that bench.input_len")
    if b.dataset_name == "custom" and b.dataset_path:
        return None if key == BAND else (
            "a prompt file's bands are [LOW, HIGH] token counts (bands: [[1, 16], [17, 48]]; [64, 64] for one length)")
    return (f"bands need random prompts (bench.dataset_name=random) or a prompt file (bench.dataset_name=custom "
            f"with bench.dataset_path); this sweep's dataset is {b.dataset_name}")


def _counts(cfg: Any, found: list[tuple[int, int]]) -> tuple[list[int] | None, str]:
    """Distinct prompts per band, and where they come from (None: a prompt file not countable here)."""
    from pathlib import Path

    from llama4spec.serving.band_prompts import token_counts

    b = cfg.bench
    if b.dataset_name == "random":
        return [num_prompts(cfg)] * len(found), "random prompts a run"
    if b.dataset_name == "speed_bench":  # a directory prepared elsewhere: not counted here
        return None, str(b.dataset_path)
    counted = token_counts(cfg, Path(b.dataset_path))
    if counted is None:
        return None, str(b.dataset_path)
    return [sum(low <= n <= high for _, n in counted) for low, high in found], str(b.dataset_path)


def config_problems(bands: list[Any], cfgs: list[Any], matrix: dict[str, list[str]], at: str) -> list[str]:
    """The bands against the composed configs of the sweep's servers: the dataset they need, each
    server's max_model_len, and the distinct prompts each band holds (a prompt file's, counted by the
    target's tokenizer where it lies on this machine)."""
    if not cfgs:
        return []
    key, _ = axis(bands)
    found = spans(bands)
    wrong = _dataset_problem(cfgs[0], key)
    if wrong:
        return [f"{at}: bands: {wrong}"]
    out = []
    output = _largest(matrix, "bench.output_len", cfgs[0].bench.output_len) or (SPEED_OUTPUT if key == SPEED else 0)
    named = {span: name for name in bands if isinstance(name, str) for span in [_band(name)]}
    said = "its output length (--speed-bench-output-len)" if key == SPEED else "bench.output_len"
    for cfg in cfgs:
        limit = cfg.memory.max_model_len
        out += [f"{at}: bands: {named.get((low, high)) or _text(low, high)} ({high} tokens) + {said} {output} "
                f"exceed the server's max_model_len {limit}; drop the band or raise memory.max_model_len"
                for low, high in found if limit and high + output > limit]
    counts, source = _counts(cfgs[0], found)
    need = max(MIN_BAND_PROMPTS, _largest(matrix, "bench.max_concurrency", cfgs[0].bench.max_concurrency) or 1)
    for (low, high), n in zip(found, counts or []):
        if n == 0:
            out.append(f"{at}: bands: {_text(low, high)} is empty: no prompt of {source} has that many tokens")
        elif n < need:
            out.append(f"{at}: bands: {_text(low, high)} holds {n} distinct prompts of {source}; a verdict over a "
                       f"band needs at least {need} ({MIN_BAND_PROMPTS}, and one per client slot at the highest "
                       f"concurrency)")
    return list(dict.fromkeys(out))


def checked(bands: list[Any], cfgs: list[Any], matrix: dict[str, list[str]], at: str,
            problems: list[str]) -> dict[str, list[str]]:
    """The matrix, its band axis taken out when the bands are refused (their problems added)."""
    found = config_problems(bands, cfgs, matrix, at)
    problems.extend(found)
    return {k: v for k, v in matrix.items() if k not in (LENGTH, BAND, SPEED)} if found else matrix


def describe(bands: list[Any], what: str | None = None) -> list[str]:
    """What the dry run says of a step's bands; ``what``: what is done per band, when not a sweep's
    comparison with no speculation in the same band."""
    key, values = axis(bands)
    lines = [f"input-length bands ({key}): {', '.join(values)}; " + (what or (
        "each band compared with no speculation in the same band, and where speculation stops paying between "
        "adjacent bands reported"))]
    if key == SPEED:
        lines.append(f"speed_bench: vLLM reads <bench.dataset_path>/<subset>.jsonl from a directory prepared with "
                     f"NVIDIA's script ({SPEED_SCRIPT}); vLLM does not download it. Each request asks for "
                     f"{SPEED_OUTPUT} output tokens (--speed-bench-output-len) unless bench.output_len says "
                     f"otherwise; every band's prompt plus that is checked against max_model_len")
    return lines
