"""The ``breakeven`` feature whole: its step kind (keys, checks, expansion into servers and bench
runs) and its report (the map, the plot, the self-check)."""
