"""What a step raises when it fails (its own module: ``steps/__init__`` loads the step kinds, which
raise it)."""

from __future__ import annotations


class StepFailed(Exception):
    """A step that failed; ``tail`` holds the last lines of the log that says why."""

    def __init__(self, message: str, tail: list[str] | None = None):
        super().__init__(message)
        self.tail = tail or []
