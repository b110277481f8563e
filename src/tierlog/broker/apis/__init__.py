"""One module per Kafka API (``api_<key>_<name>``); each declares its version range.

``REGISTRY`` maps API key -> module; the ApiVersions answer is built from it.
Every ``api_*`` module of this package is registered: adding an API is adding
its module.  ``advertised`` is what ApiVersions lists: every registered API, the share APIs
(KIP-932: 76-79, the share coordinator's 83-87 between brokers, the admin APIs 90-92) only while
``SHARE_APIS_ADVERTISED`` is on -- the one switch, on since confluent-kafka's ShareConsumer works
end to end (issue 37: a half-served share protocol would look to a client like an empty queue).
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

SHARE_APIS = frozenset({76, 77, 78, 79,      # ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge
                        83, 84, 85, 86, 87,   # the share coordinator's, between brokers (InitializeShareGroupState...)
                        90, 91, 92})          # Describe/Alter/DeleteShareGroupOffsets (admin)
SHARE_APIS_ADVERTISED = True                # the one switch: share groups served end to end


def advertised(registry: dict) -> dict:
    """The APIs ApiVersions lists of ``registry``."""
    if SHARE_APIS_ADVERTISED:
        return dict(registry)
    return {k: m for k, m in registry.items() if k not in SHARE_APIS}


__all__ = ["REGISTRY", "SHARE_APIS", "SHARE_APIS_ADVERTISED", "advertised"]
