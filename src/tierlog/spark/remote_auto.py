"""``remoteStorage=auto`` (the default): read directly when the topic is tiered and the store is
reachable from here, else through the brokers.

The driver learns it from the cluster, so the user does not repeat it:

1. DescribeConfigs of the read's topics: those with ``remote.storage.enable=true`` are tiered.
   None tiered: brokers.
2. DescribeConfigs of one broker (the leader of a tiered partition): its ``rsm.config.storage.*``
   settings say the store's kind and location (``broker.apis.api_32_describe_configs`` shows them;
   credentials are never settings: boto3's chain finds them here as on the broker). A refusal
   (no DESCRIBE_CONFIGS on the cluster) or no storage settings: brokers, with an info log.
   The source's own ``rsm.config.*`` options win over the broker's (an S3 endpoint seen from
   elsewhere, encryption keys).
3. The broker says uploads are encrypted (``rsm.config.encryption.enabled``) and the options give
   no key: brokers (keys are never shown).
4. The store must answer from here: listing the tiered topics must find their segments (a
   directory not mounted here, S3 refusing us: brokers). On one machine the executors see
   what the driver sees; on a cluster an fs store must be mounted at the same path on every
   executor, and S3 credentials be there (``spark.executorEnv.*``), or set ``remoteStorage=off``.

The decisions on the answers are pure functions (``tiered_topics``, ``store_settings``); ``detect``
does the asking.
"""

from __future__ import annotations

import logging

from tierlog.client import Cluster
from tierlog.extras import MissingExtraError
from tierlog.protocol.errors import ErrorCode, describe
from tierlog.spark.options import OptionError, SourceOptions
from tierlog.spark.remote_store import StoreSpec, StoreView
from tierlog.tiered import RemoteStorageError
from tierlog.tiered.encryption_config import ENABLED as ENCRYPTION_ENABLED
from tierlog.tiered.factory import STORAGE_KEYS

__all__ = ["REMOTE_STORAGE_ENABLE", "detect", "list_reachable", "store_settings", "tiered_topics"]

log = logging.getLogger(__name__)

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4           # DescribeConfigs resource types
REMOTE_STORAGE_ENABLE = "remote.storage.enable"
_ENCRYPTION_PREFIX = "rsm.config.encryption."


def tiered_topics(results: list[dict]) -> list[str]:
    """The topics whose DescribeConfigs result says ``remote.storage.enable=true``."""
    return sorted(r["ResourceName"] for r in results if r["ErrorCode"] == ErrorCode.NONE and any(
        c["Name"] == REMOTE_STORAGE_ENABLE and str(c["Value"]).lower() == "true" for c in r["Configs"]))


def store_settings(result: dict, given: dict[str, str]) -> tuple[dict[str, str] | None, str]:
    """The ``rsm.config.*`` settings to open the store with, from a broker's DescribeConfigs
    ``result`` and the source's own ``given`` ones (which win); or None and why not."""
    if result["ErrorCode"] != ErrorCode.NONE:
        return None, f"the broker's configs cannot be read: {describe(result['ErrorCode'])}"
    shown = {c["Name"]: c["Value"] for c in result["Configs"] if c["Value"] is not None}
    storage = {k: v for k, v in shown.items() if k in STORAGE_KEYS}
    if not storage:
        return None, "the broker shows no rsm.config.storage.* settings"
    if str(shown.get(ENCRYPTION_ENABLED, "false")).lower() == "true" and not any(
            k.startswith(_ENCRYPTION_PREFIX) and k != ENCRYPTION_ENABLED for k in given):
        return None, "uploads are encrypted and no rsm.config.encryption.* key option is given"
    return {**storage, **given}, ""


def detect(cluster: Cluster, topics: list[str], opts: SourceOptions) -> tuple[StoreSpec, StoreView] | None:
    """The store to read ``topics`` from directly, with its listing of the tiered ones; None: brokers."""
    if not topics:
        return None
    tiered = tiered_topics(cluster.describe_configs(cluster.leader((topics[0], 0)),
                                                    [(TOPIC_RESOURCE, t) for t in topics]))
    if not tiered:
        return None
    node = cluster.leader((tiered[0], 0))
    settings, why = store_settings(cluster.describe_configs(node, [(BROKER_RESOURCE, str(node))])[0],
                                   dict(opts.remote_settings))
    if settings is None:
        log.info("tierlog: remoteStorage=auto reads %s through the brokers: %s", ", ".join(tiered), why)
        return None
    spec = StoreSpec(None, tuple(sorted(settings.items())))
    view = list_reachable(spec, tiered)
    return None if view is None else (spec, view)


def list_reachable(spec: StoreSpec, tiered: list[str]) -> StoreView | None:
    """The store's listing of ``tiered``; None (logged) when it does not answer or holds none of them."""
    try:
        store = spec.open()
        view = StoreView.of_topics(store, tiered, spec.encryption())
    except (OptionError, RemoteStorageError, MissingExtraError, OSError) as exc:
        log.info("tierlog: remoteStorage=auto reads %s through the brokers: the store does not answer "
                 "from here (%s)", ", ".join(tiered), exc)
        return None
    if not view.listings:
        log.info("tierlog: remoteStorage=auto reads %s through the brokers: %s holds none of their segments "
                 "(not mounted here?)", ", ".join(tiered), store.describe())
        return None
    return view
