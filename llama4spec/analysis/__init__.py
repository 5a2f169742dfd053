"""Pure statistics and models: sweeps and their reading, noise (variance components, profiles), capacity, break-even maps."""
