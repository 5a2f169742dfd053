"""What every design of repeated server starts shares (a sweep's ``starts`` and blocks, a break-even
map's and a capacity step's blocks): the rounds' seeded order, and whether two servers fit side by
side (back-to-back blocks keep a server without speculation up beside the one compared with it)."""

from __future__ import annotations

import random
from typing import Mapping

MAX_BLOCKS = 20  # back-to-back blocks a setting (a break-even map's, a capacity step's)


def rounds(settings: int, starts: int, seed: int) -> list[list[int]]:
    """``starts`` rounds, each the indices 0 .. settings - 1 in a random order from ``seed``."""
    rng = random.Random(seed)
    out = []
    for _ in range(starts):
        order = list(range(settings))
        rng.shuffle(order)
        out.append(order)
    return out


def side_by_side_problem(cfg, environ: Mapping[str, str] | None = None) -> str | None:
    """Why two servers of ``cfg``'s shape do not fit side by side on this node's devices (None: they
    do; ``environ``: where the devices are read, this process's by default)."""
    import os

    from llama4spec.engine.devices import split

    if max(1, cfg.parallel.nnodes) > 1:
        return "its servers span nodes; two multi-node servers are not kept side by side"
    per_node = cfg.parallel.tensor_parallel_size * cfg.parallel.pipeline_parallel_size
    return split(cfg.hardware.device, per_node, cfg.hardware.devices_per_node,
                 os.environ if environ is None else environ).why
