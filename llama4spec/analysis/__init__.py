"""Pure analysis on the statistics core (``llama4spec.stats``): sweeps and their reading, capacity, break-even maps."""
