"""Losslessness: does speculation leave what the target says unchanged? At temperature 0 the
outputs are compared with the target's own (judged against the divergence the engine shows between
two runs without speculation), above 0 the emitted tokens' frequencies with the target's exact
next-token distribution (the tiny pairs know it). ``stats`` is pure; ``run`` starts engines."""
