"""The ``llama4spec`` command line: one module per command family, loaded lazily."""
