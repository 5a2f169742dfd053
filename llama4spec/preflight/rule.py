"""A doctor rule: what it reads (``Pairing``: the config and both models' ``config.json``) and what
it says (``Finding``: severity, what, why, fix)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from llama4spec.config import methods
from llama4spec.config.schema import Config
from llama4spec.preflight.sources import ModelConfig

ERROR, WARNING, INFO = "error", "warning", "info"


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # error | warning | info
    what: str
    why: str
    fix: str

    def line(self) -> str:
        return f"{self.what}: {self.why}; fix: {self.fix}"


@dataclass
class Pairing:
    cfg: Config
    target: ModelConfig
    draft: ModelConfig | None  # None without a draft model (no speculation, ngram, suffix)

    @property
    def t(self) -> dict[str, Any]:
        return self.target.text

    @property
    def d(self) -> dict[str, Any]:
        return self.draft.text if self.draft else {}

    @property
    def eagle(self) -> bool:
        return methods.reads_hidden_states(self.cfg.draft.method) and self.draft is not None

    @property
    def llama4_eagle(self) -> bool:
        return self.eagle and self.cfg.draft.method == "eagle" and self.d.get("model_type") == "llama4_text"

    @property
    def models(self) -> list[ModelConfig]:
        """The config.json files vLLM will read: the target's, and the draft's (an EAGLE head or a draft model)."""
        return [self.target] + ([self.draft] if self.draft is not None else [])


Rule = Callable[[Pairing], list[Finding]]
