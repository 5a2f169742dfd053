"""Pure builders: what a config implies for vLLM (kwargs, argv, environment, secrets). No I/O."""
