"""The one exception type for user mistakes: the CLI prints its lines and exits 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input: a wrong override, config, model path, dataset or runbook."""

    def __init__(self, *problems: str):
        self.problems = [p for p in problems if p]
        super().__init__("; ".join(self.problems))
