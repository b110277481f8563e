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
from tierlog.client.fetcher import (
    DataLossError,
    read_range,
    receive_message_max_bytes_for,
)

__all__ = [
    "EARLIEST", "HEADERS_TYPE", "KAFKA_SCHEMA", "KAFKA_SCHEMA_WITH_HEADERS", "LATEST",
    "Cluster", "DataLossError", "KafkaError",
    "decode_fetched", "parse_bootstrap", "read_range", "receive_message_max_bytes_for",
]
