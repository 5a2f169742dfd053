"""The tiny EAGLE-3 head's weights (pure: numpy); tests/unit/tiny/test_eagle3.py runs its forward pass.

vLLM's EAGLE-3 Llama head (``vllm/model_executor/models/llama_eagle3.py``) reads the target's hidden
states after the layers ``AUX_LAYERS`` (``eagle_config.eagle_aux_hidden_state_layer_ids``; the
target returns ``hidden + residual`` there, ``EagleModelMixin._maybe_add_hidden_state``), joins them
and maps them to one hidden state with ``fc``. Its one layer feeds ``[norm(embedding) |
norm(hidden)]`` to attention and keeps the hidden state as the residual; the layer returns the
residual plus attention and MLP outputs, the head samples from ``norm`` of that, and each later
drafting step is fed that pre-norm sum (``llm_base_proposer.py``: the draft's own hidden state).

On the tiny target every auxiliary state is the one-hot embedding ``e(x)`` of the token ``x`` at its
position (attention and MLP outputs are zero). The head is set so that:

* ``fc`` averages the three auxiliary states: ``e(x)``;
* attention outputs zero (``o_proj`` = 0), so the token embedding plays no part;
* the MLP moves the one-hot stream one word along the chain: ``MLP(norm(e(x))) = e(succ(x)) - e(x)``
  (gate and up project each word on itself; ``down`` = ``(P_succ - I) / c`` with ``c`` the gated
  activation of a normalised one-hot), so the layer's output is ``e(succ(x))``;
* ``lm_head`` is the draft's map ``d`` (the successor, or the imperfect draft's map).

At the position of the token ``y`` before the last sampled token ``o = succ(y)`` the head proposes
``d(succ(y)) = d(o)``, then ``d(succ(o))``, ``d(succ(succ(o)))``, ... The EAGLE draft of the same map
proposes ``d(o)``, ``d(d(o))``, ...: the two agree up to the first draft the target rejects, and
vLLM counts nothing after it, so greedy acceptance is the EAGLE simulation's exactly.
"""

from __future__ import annotations

import math

import numpy as np

from llama4spec.tiny.words import HIDDEN, VOCAB, successor

AUX_LAYERS = (1, 4, 7)  # of the target's 8 layers: early, middle, late, as NVIDIA's Maverick head reads 1, 23, 44 of 48
INTERMEDIATE = HIDDEN  # one MLP unit per word
EPS = 1e-05  # rms_norm_eps
GATE = 1.0  # gate weight: silu(GATE * s) is s * (1 - 1e-7): the unit of the current word fires


def norm_scale() -> float:
    """RMSNorm's factor on a one-hot vector (unit weights): ``1 / sqrt(1 / HIDDEN + eps)``."""
    return 1.0 / math.sqrt(1.0 / HIDDEN + EPS)


def _silu(z):
    return z / (1.0 + np.exp(-z))


def fc() -> np.ndarray:
    """``[I/3 | I/3 | I/3]``: the mean of the auxiliary states (hidden x 3 hidden)."""
    eye = np.eye(HIDDEN, dtype=np.float64) / len(AUX_LAYERS)
    return np.concatenate([eye] * len(AUX_LAYERS), axis=1).astype(np.float32)


def mlp() -> dict[str, np.ndarray]:
    """gate, up and down projections with ``MLP(s e(x)) = e(succ(x)) - e(x)`` for every token ``x``."""
    s = norm_scale()
    c = float(_silu(GATE * s) * s)
    shift = np.zeros((HIDDEN, INTERMEDIATE), dtype=np.float64)
    for i in range(VOCAB):
        shift[successor(i), i] += 1.0
        shift[i, i] -= 1.0
    return {
        "gate_proj": (GATE * np.eye(INTERMEDIATE, HIDDEN)).astype(np.float32),
        "up_proj": np.eye(INTERMEDIATE, HIDDEN, dtype=np.float32),
        "down_proj": (shift / c).astype(np.float32),
    }
