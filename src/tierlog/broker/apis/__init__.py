"""One module per Kafka API (``api_<key>_<name>``); each declares its version range.

``REGISTRY`` maps API key -> module; the ApiVersions answer is built from it.
Every ``api_*`` module of this package is registered: adding an API is adding
its module.
"""
from __future__ import annotations

import importlib
import pkgutil


def _discover() -> dict:
    registry = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("api_"):
            module = importlib.import_module(f"{__name__}.{info.name}")
            assert module.API_KEY not in registry, f"two modules serve api {module.API_KEY}"
            registry[module.API_KEY] = module
    return registry


REGISTRY = _discover()

__all__ = ["REGISTRY"]
