"""Clients of our own: a small blocking Kafka client for the Spark data source.

``Cluster`` (bootstrap + Metadata, ListOffsets by leader) comes with every
install. ``read_range`` (Fetch from the leader, records decoded straight into
Arrow batches) and the Arrow names need the ``spark`` extra (pyarrow, numpy);
they are imported when first used, so ``import tierlog.client`` works without it
and using them without it is a one-line MissingExtraError.
"""

from __future__ import annotations

import importlib

from tierlog.client.cluster import (
    EARLIEST,
    LATEST,
    Cluster,
    KafkaError,
    parse_bootstrap,
)
from tierlog.extras import require
from tierlog.records.aborted import READ_COMMITTED, READ_UNCOMMITTED

__all__ = [
    "EARLIEST", "HEADERS_TYPE", "KAFKA_SCHEMA", "KAFKA_SCHEMA_WITH_HEADERS", "LATEST", "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "Cluster", "DataLossError", "KafkaError",
    "decode_fetched", "parse_bootstrap", "read_range", "receive_message_max_bytes_for",
]

_ARROW_NAMES = {
    "HEADERS_TYPE": "tierlog.records.arrow_records", "KAFKA_SCHEMA": "tierlog.records.arrow_records",
    "KAFKA_SCHEMA_WITH_HEADERS": "tierlog.records.arrow_records", "decode_fetched": "tierlog.records.arrow_records",
    "DataLossError": "tierlog.client.range_reader", "read_range": "tierlog.client.range_reader",
    "receive_message_max_bytes_for": "tierlog.client.range_reader",
}


def __getattr__(name: str):
    module = _ARROW_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    require("spark", "tierlog's Arrow reader")
    return getattr(importlib.import_module(module), name)
