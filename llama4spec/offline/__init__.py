"""Offline runs: vLLM's ``LLM`` on a composed config, prompts, and their tables."""
