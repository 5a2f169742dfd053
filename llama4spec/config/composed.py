"""What one composition gives: the typed config, the resolved DictConfig (made when first read,
from a choice of groups resolved once and the leaf values set on it), the option chosen in each
group and the overrides."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any, Sequence

from omegaconf import DictConfig, OmegaConf

from llama4spec.config.schema import Config


class Composed:
    """One composition: the typed object (each caller's own), the resolved DictConfig (for printing
    and run records; made when first read, see ``Raw``), the option chosen in each group, the overrides."""

    def __init__(self, cfg: Config, raw: DictConfig | Raw, choices: dict[str, str], overrides: list[str]):
        self.cfg = cfg
        self._raw = raw if isinstance(raw, Raw) else Raw(raw)
        self.choices = choices  # group -> chosen option
        self.overrides = overrides

    @property
    def raw(self) -> DictConfig:
        return self._raw.get()

    def containers(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The resolved config as plain data, resolved and unresolved (what ``OmegaConf.to_container``
        gives with ``resolve=True`` and ``False``): fresh (one object twice when they are equal, as
        they are without interpolations), and without making ``raw`` when it is not made."""
        return self._raw.containers()


class Raw:
    """A composition's resolved DictConfig: given, or made when first read from its group choices'
    resolved tree and its leaf values (checked by ``group_trees._Groups.leaf`` to give what Hydra's application
    of them gives). Shared by every composition of the same overrides; read-only once ``seal``ed."""

    def __init__(self, cfg: DictConfig | None = None, base: Finished | None = None,
                 values: Sequence[tuple[str, Any, Any]] = ()):
        self._cfg, self._base, self._values, self._sealed = cfg, base, tuple(values), False

    def seal(self) -> None:
        self._sealed = True
        if self._cfg is not None:
            OmegaConf.set_readonly(self._cfg, True)

    def get(self) -> DictConfig:
        if self._cfg is None:
            cfg = pickle.loads(self._base.tree)
            for key, value, _ in self._values:  # as Hydra applies a value override
                OmegaConf.update(cfg, key, value, merge=True)
            self._cfg = cfg
            if self._sealed:
                OmegaConf.set_readonly(cfg, True)
        return self._cfg

    def containers(self) -> tuple[dict[str, Any], dict[str, Any]]:
        if self._base is None:
            return OmegaConf.to_container(self._cfg, resolve=True), OmegaConf.to_container(self._cfg, resolve=False)
        data = self._plain(self._base.resolved)
        return data, data if self._base.unresolved is None else self._plain(self._base.unresolved)

    def _plain(self, pickled: bytes) -> dict[str, Any]:
        data = pickle.loads(pickled)
        for key, _, stored in self._values:
            *path, last = key.split(".")
            node = data
            for part in path:
                node = node[part]
            node[last] = stored
        return data


@dataclass(frozen=True)
class Finished:
    """A choice of groups resolved (``finish``) with no value override: the resolved tree, the typed
    object and the plain data (resolved, unresolved: None when the same), each pickled."""

    tree: bytes
    typed: bytes
    resolved: bytes
    unresolved: bytes | None
