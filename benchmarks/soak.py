"""A soak under load: one tiny server (EAGLE k=3, API key on) kept busy for a set time.

Starts `llama4spec serve` on the tiny pair with `memory.max_num_seqs=16` and an API key, then keeps
`--concurrency` (default 32, twice max_num_seqs, so the server queues) completion requests in
flight, closed loop, for `--minutes` (default 10). Every `--wrong-key-every` seconds one request
carries a wrong key and must get 401. Per minute it prints requests served, errors, 401s, P99
latency, the server's mean queue time (vLLM's `vllm:request_queue_time_seconds` over the requests
that finished that minute) and the RSS of the server's whole process tree; at the end, the RSS
growth from the end of the first minute (the warm-up) to the end of the last. Every request goes
to 127.0.0.1; the loop stops by itself at the deadline.

    .venv/bin/python benchmarks/soak.py [--minutes 10] [--concurrency 32] [--wrong-key-every 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

KEY_ENV = "LLAMA4SPEC_SOAK_KEY"
QUEUE = "vllm:request_queue_time_seconds"


@dataclass
class Minute:
    served: int = 0
    errors: int = 0
    unauthorised: int = 0
    latencies: list[float] = field(default_factory=list)
    queue_s: float | None = None
    rss_mib: float | None = None

    def p99(self) -> float | None:
        if not self.latencies:
            return None
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, int(round(0.99 * (len(xs) - 1))))]


def tree_rss_mib(root: int) -> float:
    """Resident memory of ``root`` and every descendant, from /proc (MiB)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in tree} - tree
        tree |= more
        grew = bool(more)
    total_kib = 0
    for pid in tree:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
        except OSError:
            pass
    return total_kib / 1024


def queue_totals(text: str) -> tuple[float, float]:
    """(sum, count) of vLLM's request queue-time histogram on a /metrics page."""
    from prometheus_client.parser import text_string_to_metric_families

    total = count = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == QUEUE + "_sum":
                total += s.value
            elif s.name == QUEUE + "_count":
                count += s.value
    return total, count


async def soak(url: str, model: str, key: str, minutes: float, concurrency: int, wrong_every: float,
               server_pid: int) -> list[Minute]:
    import aiohttp

    start = time.monotonic()
    deadline = start + 60 * minutes
    per_minute: list[Minute] = [Minute() for _ in range(int(minutes + 0.999))]
    good = {"Authorization": f"Bearer {key}"}
    timeout = aiohttp.ClientTimeout(total=300)

    def bucket() -> Minute:
        return per_minute[min(len(per_minute) - 1, int((time.monotonic() - start) // 60))]

    async with aiohttp.ClientSession(timeout=timeout) as session:
        async def one(headers: dict[str, str], i: int) -> int:
            body = {"model": model, "prompt": " ".join(f"w{4 + (i * 7 + j) % 250}" for j in range(16)),
                    "max_tokens": 64, "temperature": 0, "ignore_eos": True}
            async with session.post(f"{url}/v1/completions", json=body, headers=headers) as r:
                await r.read()
                return r.status

        async def worker(n: int) -> None:
            i = n
            while time.monotonic() < deadline:
                sent = time.monotonic()
                try:
                    status = await one(good, i)
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    status = -1
                m = bucket()
                if status == 200:
                    m.served += 1
                    m.latencies.append(time.monotonic() - sent)
                else:
                    m.errors += 1
                i += concurrency

        async def intruder() -> None:
            while time.monotonic() + wrong_every < deadline:
                await asyncio.sleep(wrong_every)
                try:
                    status = await one({"Authorization": "Bearer wrong-" + secrets.token_hex(4)}, 0)
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    status = -1
                m = bucket()
                if status == 401:
                    m.unauthorised += 1
                else:
                    m.errors += 1

        async def sampler() -> None:
            last = None
            for m in per_minute:
                end = start + 60 * (per_minute.index(m) + 1)
                await asyncio.sleep(max(0.0, min(end, deadline) - time.monotonic()))
                async with session.get(f"{url}/metrics", headers=good) as r:
                    totals = queue_totals(await r.text())
                if last is not None and totals[1] > last[1]:
                    m.queue_s = (totals[0] - last[0]) / (totals[1] - last[1])
                elif last is None and totals[1] > 0:
                    m.queue_s = totals[0] / totals[1]
                last = totals
                m.rss_mib = tree_rss_mib(server_pid)

        await asyncio.gather(*(worker(n) for n in range(concurrency)), intruder(), sampler())
    return per_minute


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--wrong-key-every", type=float, default=5.0)
    args = parser.parse_args()
    if not 0 < args.minutes <= 120 or not 1 <= args.concurrency <= 256 or not args.wrong_key_every > 0:
        sys.exit("--minutes must be in (0, 120], --concurrency in 1..256, --wrong-key-every > 0")

    from llama4spec.serving.process import is_healthy, stop_groups
    from llama4spec.tiny.build import ensure_built
    from llama4spec.tiny.paths import tiny_path

    ensure_built()
    key = secrets.token_hex(16)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log = Path(tempfile.mkdtemp(prefix="soak-")) / "server.log"
    argv = [sys.executable, "-m", "llama4spec", "serve", "lookahead=3", "memory.max_num_seqs=16",
            f"serve.api_key_env={KEY_ENV}", f"serve.port={port}", "--log", str(log)]
    proc = subprocess.Popen(argv, env={**os.environ, KEY_ENV: key}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 900
        while not is_healthy(url, timeout_s=2):
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"the server did not start (log: {log})")
            time.sleep(1)
        print(f"server up on {url} (pid {proc.pid}); {args.concurrency} in flight for {args.minutes:g} min", flush=True)
        minutes = asyncio.run(soak(url, str(tiny_path("target")), key, args.minutes, args.concurrency,
                                   args.wrong_key_every, proc.pid))
    finally:  # Ctrl-C, as a user stops it; then (a shell's background job ignores SIGINT) SIGTERM to its
        # group after 120 s, and whatever is left of it 60 s later is killed
        stop_groups([proc], 120, ask=lambda p: p.send_signal(signal.SIGINT), then_grace_s=60)
    print("| minute | served | errors | 401 (wrong key) | P99 latency s | mean queue s | server RSS MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for i, m in enumerate(minutes, 1):
        p99, q = m.p99(), m.queue_s
        print(f"| {i} | {m.served} | {m.errors} | {m.unauthorised} | {'-' if p99 is None else f'{p99:.2f}'} | "
              f"{'-' if q is None else f'{q:.2f}'} | {'-' if m.rss_mib is None else f'{m.rss_mib:.0f}'} |")
    served, errors = sum(m.served for m in minutes), sum(m.errors for m in minutes)
    rss = [m.rss_mib for m in minutes if m.rss_mib]
    growth = (rss[-1] / rss[0] - 1) * 100 if len(rss) > 1 else 0.0
    print(f"served {served}, errors {errors}, 401s {sum(m.unauthorised for m in minutes)}; "
          f"RSS after warm-up {rss[0]:.0f} MiB -> {rss[-1]:.0f} MiB ({growth:+.1f}%)" if rss else "no RSS sample")


if __name__ == "__main__":
    # SIGTERM (a batch system, kill) unwinds like Ctrl-C: the servers it started are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
