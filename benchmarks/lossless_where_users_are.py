"""The losslessness check where users are: a copy of the spread tiny target under another directory
(the check does not recognise it, so the context-conditioned test decides), distinct prompts, one
sample each, with and without this project's CPU fix, offline and against a running server.

Each row is one `llama4spec lossless` run (its own engines); beside its verdict, the tiny spread
target's exact test run on the same outputs (the cross-check the copy hides from the check):

1. offline, with the fix, T = 0.6, 0.8, 1.0 (one run);
2. offline, without the fix (`VLLM_PLUGINS=""`, the doctor's refusal forced past), the same;
3. offline, with the fix, top_p 0.9, the same temperatures;
4. served: a `llama4spec serve` of the copy with the tiny EAGLE spread draft, with the fix, then
   without it; `lossless --url` at 0.8 against each.

    .venv/bin/python benchmarks/lossless_where_users_are.py [--prompts 64] [--tokens 64] [--only offline|served]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OFF = {"VLLM_PLUGINS": ""}


def _lossless(runs: Path, copy: Path, prompts: int, tokens: int, temperatures: str, *extra: str,
              env: dict | None = None) -> tuple[dict, float]:
    argv = [sys.executable, "-m", "llama4spec", "lossless", "target=tiny_spread", f"target.model={copy}",
            "draft=tiny_eagle_spread", f"dataset.num_prompts={prompts}", f"generation.max_tokens={tokens}",
            "generation.ignore_eos=true", "--temperatures", temperatures, "--samples", str(prompts),
            "--runs-dir", str(runs), "-q", *extra]
    started = time.monotonic()
    done = subprocess.run(argv, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=3600)
    records = sorted(runs.glob("lossless/*/lossless/lossless.json"))
    if not records:
        sys.exit(f"no record from {' '.join(argv[3:])}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return json.loads(records[-1].read_text()), time.monotonic() - started


def _rows(name: str, record: dict, seconds: float) -> list[str]:
    from llama4spec.lossless import check
    from llama4spec.lossless.settings import Settings

    out = []
    for t in record["sampled"]:
        top_p = t["sampling"]["top_p"]
        exact = check.exact_test("target_spread", Settings(top_p=top_p), t["temperature"],
                                 [o["token_ids"] for o in t["outputs"]], t["level"], seed=0)
        c = t["control"]
        out.append(f"| {name} | {t['temperature']:g}{f' (top_p {top_p:g})' if top_p < 1 else ''} | "
                   f"{'/'.join(map(str, t['counts']))} | {'/'.join(map(str, c['counts']))} | {t['p_value']:.3g} | "
                   f"{t['level']:.3g} | **{t['verdict']}** | {exact.p_value:.3g}: {exact.verdict} | "
                   f"{c['sharp']:.3g} / {c['flat']:.2g} | {seconds:.0f} s |")
    return out


def _server(copy: Path, env: dict, where: Path):
    from llama4spec.serving.process import is_healthy

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "llama4spec", "serve", "target=tiny_spread", f"target.model={copy}",
            "draft=tiny_eagle_spread", "lookahead=3", f"serve.port={port}", "--log", str(where / "server.log"),
            "--force"]
    proc = subprocess.Popen(argv, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 900
    while not is_healthy(url, timeout_s=2):
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"the server did not start (log: {where / 'server.log'})")
        time.sleep(1)
    return proc, url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--only", choices=("offline", "served"))
    args = parser.parse_args()
    from llama4spec.serving.process import stop_groups
    from llama4spec.tiny.build import ensure_built

    base = Path(tempfile.mkdtemp(prefix="lossless-users-"))
    copy = base / "models" / "some-llama4-target"
    shutil.copytree(ensure_built() / "target_spread", copy)
    rows = []
    temps = "0.6,0.8,1.0"
    if args.only != "served":
        for name, env, extra in (("offline, with the fix", None, ()), ("offline, without the fix", OFF, ("--force",)),
                                 ("offline, with the fix", None, ("--top-p", "0.9"))):
            record, s = _lossless(base / f"runs{len(rows)}", copy, args.prompts, args.tokens, temps, *extra, env=env)
            rows += _rows(name, record, s)
            print(rows[-1], flush=True)
    if args.only != "offline":
        for name, env in (("served, with the fix", {}), ("served, without the fix", OFF)):
            where = base / name.replace(" ", "_").replace(",", "")
            where.mkdir()
            proc, url = _server(copy, env, where)
            try:
                record, s = _lossless(where / "runs", copy, args.prompts, args.tokens, "0.8", "--url", url)
            finally:
                stop_groups([proc], 120, ask=lambda p: p.send_signal(signal.SIGINT), then_grace_s=60)
            rows += _rows(name, record, s)
            print(rows[-1], flush=True)
    print(f"\ncopy of the spread target: {copy}; {args.prompts} distinct prompts, one sample each, {args.tokens} tokens")
    print("| run | T | draft: top-1/top-2/rest | control | p | level | verdict | exact test, same outputs | "
          "found with 80% power (sharp / flat) | wall |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
