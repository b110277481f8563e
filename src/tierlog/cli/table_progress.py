"""`topics describe`: how far each table topic's Iceberg table covers its partitions (backfill progress).

For the described topics whose ``tierlog.table.mode`` is not ``off`` (DescribeConfigs of
the topics), each partition gets ``table_offset``: the last offset the topic's table
covers (``tierlog.last-offset.<p>``, -1: nothing yet), read from the tables' catalog
(docs/tables.md). Beside ``highest_tiered_offset`` it shows a backfill's progress: the
two are equal once the table has caught up, by construction after that. The store is the
one the bootstrap broker shows (its ``rsm.config.storage.*`` settings, DescribeConfigs),
the catalog the default one of that store; without the ``table`` extra, or when the
store or catalog does not answer from here, the values are null (``?``) and a note says
why. Nothing is added for topics without a table.
"""

from __future__ import annotations

from typing import Any

from tierlog.cli.broker_wire import BrokerWire
from tierlog.cli.errors import CliError
from tierlog.cli.log_offsets import broker_addresses
from tierlog.cli.render import note
from tierlog.extras import MissingExtraError, require
from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.storage.table_config import OFF, TABLE_MODE
from tierlog.tiered.factory import STORAGE_KEYS

__all__ = ["FIELD", "add_table_offsets"]

FIELD = "table_offset"
_TOPIC, _BROKER = 2, 4          # DescribeConfigs resource types
_CATALOG_KEYS = ("tierlog.table.catalog.type", "tierlog.table.catalog.uri", "tierlog.table.namespace")


def add_table_offsets(wire: BrokerWire, descriptions: list[dict]) -> None:
    """Set ``table_offset`` on the partitions of the table topics among ``descriptions``."""
    if wire.version(ApiKey.DESCRIBE_CONFIGS) is None or not descriptions:
        return
    try:
        tables = _table_topics(wire, [d["topic"] for d in descriptions])
    except (CliError, TimeoutError, PeerUnavailable):      # configs not readable here: no table column
        return
    if not tables:
        return
    for d in descriptions:
        if d["topic"] in tables:
            for p in d["partitions"]:
                p[FIELD] = None
    leaders = [p["leader"] for d in descriptions if d["topic"] in tables for p in d["partitions"] if p["leader"] is not None]
    covered, why = _covered(wire, leaders[0], sorted(tables)) if leaders else (None, "no partition has a leader")
    if covered is None:
        note(f"table offsets unknown: {why}")
        return
    for d in descriptions:
        for p in d["partitions"] if d["topic"] in tables else ():
            p[FIELD] = covered.get(d["topic"], {}).get(p["partition"], -1)


def _describe(wire: BrokerWire, kind: int, names: list[str], keys: list[str] | None) -> list[dict]:
    body = {"Resources": [{"ResourceType": kind, "ResourceName": n, "ConfigurationKeys": keys} for n in names],
            "IncludeSynonyms": False, "IncludeDocumentation": False}
    version = min(wire.version(ApiKey.DESCRIBE_CONFIGS) or 0, 4)
    return list(wire.call(ApiKey.DESCRIBE_CONFIGS, body, version, "DescribeConfigs")["Results"])


def _table_topics(wire: BrokerWire, topics: list[str]) -> set[str]:
    results = _describe(wire, _TOPIC, topics, [TABLE_MODE])
    return {r["ResourceName"] for r in results if r["ErrorCode"] == ErrorCode.NONE and any(
        c["Name"] == TABLE_MODE and c["Value"] not in (None, OFF) for c in r["Configs"])}


def _covered(wire: BrokerWire, leader: int, topics: list[str]) -> tuple[dict[str, dict[int, int]] | None, str]:
    """Per topic and partition the covered offset (the store as ``leader`` shows it), or None and why not."""
    try:
        require("table", "tierlog topics describe's table offsets")
    except MissingExtraError as e:
        return None, str(e)
    address = broker_addresses(wire).get(leader)
    if address is None:
        return None, f"broker {leader} is not in the metadata"
    try:
        with BrokerWire(address, wire.remaining_s(), wire.security) as broker:
            [result] = _describe(broker, _BROKER, [str(leader)], None)
    except (CliError, TimeoutError, PeerUnavailable) as e:
        return None, f"broker {leader}: {e}"
    shown = {c["Name"]: c["Value"] for c in result["Configs"] if c["Value"] is not None} \
        if result["ErrorCode"] == ErrorCode.NONE else {}
    storage = {k: v for k, v in shown.items() if k in STORAGE_KEYS}
    if not storage:
        return None, "the broker shows no rsm.config.storage.* settings"
    # the catalog the broker shows (type, URI, namespace; its other properties, a REST catalog's credential
    # among them, are not shown: such a catalog answers with an error, noted as why)
    catalog = {k: v for k, v in shown.items() if k in _CATALOG_KEYS}
    return _read_catalog(storage, catalog, topics)


def _read_catalog(storage: dict[str, str], catalog_config: dict[str, str],
                  topics: list[str]) -> tuple[dict[str, dict[int, int]] | None, str]:
    from tierlog.tiered import RemoteStorageConfigError, RemoteStorageError, object_store_from_config
    from tierlog.tiered.table.catalog import TableCatalog, covered_offsets, s3_io, table_settings
    out: dict[str, dict[int, int]] = {}
    try:
        store = object_store_from_config(storage)
        catalog = TableCatalog(table_settings(store, catalog_config, s3_io(store)))
        for topic in topics:
            table: Any = catalog.load(topic)
            out[topic] = {} if table is None else covered_offsets(table)
    except (RemoteStorageConfigError, RemoteStorageError, OSError) as e:
        return None, str(e).splitlines()[0]
    return out, ""
