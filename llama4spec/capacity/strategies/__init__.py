"""The capacity searches, one class each (``base.Strategy``), registered by the name a capacity step's
``search`` key gives: ``fit`` (``fit.FitSearch``) and ``bisect`` (``bisect.BisectSearch``). Every module
of this package is imported here, so a new search is one module with one ``Strategy`` subclass."""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
