"""The ``breakeven`` step kind, declared with its feature (``runbook.breakeven.kind``)."""

from llama4spec.runbook.breakeven.kind import KIND

__all__ = ["KIND"]
