"""Wall time of `llama4spec offline` against a bare script making the same LLM(...) call.

Both run in one invocation of this script, on the same prompts, engine arguments and environment,
each in a fresh process (engine start included, as a user would see it). Prints the ratio.

    .venv/bin/python benchmarks/offline_overhead.py [OVERRIDES...] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARE = """
import json, sys
from vllm import LLM, SamplingParams
if __name__ == "__main__":
    spec = json.loads(open(sys.argv[1]).read())
    llm = LLM(**spec["kwargs"])
    outputs = llm.generate(spec["prompts"], SamplingParams(**spec["sampling"]), use_tqdm=False)
    print(sum(len(o.outputs[0].token_ids) for o in outputs))
"""


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    if done.returncode != 0:
        sys.exit(f"{argv[1]} failed (exit {done.returncode}):\n" + "\n".join(done.stderr.splitlines()[-15:]))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    from llama4spec.config.compose import compose_config
    from llama4spec.engine.args import engine_env, llm_kwargs
    from llama4spec.offline.prompts import load_prompts
    from llama4spec.tiny.build import ensure_built

    ensure_built()
    cfg = compose_config(args.overrides).cfg
    g = cfg.generation
    spec = {
        "kwargs": llm_kwargs(cfg),
        "prompts": load_prompts(cfg.dataset).texts,
        "sampling": {"max_tokens": g.max_tokens, "temperature": g.temperature, "ignore_eos": g.ignore_eos, "seed": g.seed},
    }
    with tempfile.TemporaryDirectory() as tmp:
        spec_path, bare_path = Path(tmp) / "spec.json", Path(tmp) / "bare.py"
        spec_path.write_text(json.dumps(spec))
        bare_path.write_text(BARE)
        tool, bare = [], []
        for _ in range(args.repeat):
            # The same engine environment for both (e.g. VLLM_CPU_KVCACHE_SPACE from memory=cpu).
            bare.append(timed([sys.executable, str(bare_path), str(spec_path)], engine_env(cfg)))
            tool.append(timed([sys.executable, "-m", "llama4spec", "offline", *args.overrides], {}))
    t, b = min(tool), min(bare)
    print(f"bare LLM script : {b:7.2f} s (best of {args.repeat})")
    print(f"llama4spec      : {t:7.2f} s (best of {args.repeat})")
    print(f"ratio           : {t / b:7.3f}  (target <= 1.10)")


if __name__ == "__main__":
    main()
