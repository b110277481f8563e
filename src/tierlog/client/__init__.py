"""Clients of our own: a small blocking Kafka client for the Spark data source.

``Cluster`` (bootstrap + Metadata, ListOffsets by leader), ``read_range`` (Fetch
from the leader, records decoded straight into Arrow batches).
"""

from tierlog.client.arrow_records import (
    HEADERS_TYPE,
    KAFKA_SCHEMA,
    KAFKA_SCHEMA_WITH_HEADERS,
    decode_fetched,
)
from tierlog.client.cluster import (
    EARLIEST,
    LATEST,
    Cluster,
    KafkaError,
    parse_bootstrap,
)
from tierlog.client.connection import BrokerConnection, ConnectionError_
from tierlog.client.fetcher import DataLossError, read_range

__all__ = [
    "EARLIEST", "HEADERS_TYPE", "KAFKA_SCHEMA", "KAFKA_SCHEMA_WITH_HEADERS", "LATEST",
    "BrokerConnection", "Cluster", "ConnectionError_", "DataLossError", "KafkaError",
    "decode_fetched", "parse_bootstrap", "read_range",
]
