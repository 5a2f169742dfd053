"""llama4spec: run and measure EAGLE speculative decoding for Llama 4 on vLLM."""

__version__ = "0.1.0"
