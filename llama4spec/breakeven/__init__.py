"""The ``breakeven`` feature's report (the map, the plot, the self-check); its step kind is
``breakeven.kind``."""
