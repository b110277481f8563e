"""Durable segmented log per partition, in Kafka's on-disk layout.

``Log`` is one partition (append / read / flush / retention / truncation / epoch
cache / recovery); ``LogManager`` owns every log of a node across its log
directories; ``LogConfig`` resolves topic configs (``TOPIC_CONFIGS`` lists them).
"""

from tierlog.storage.config import INTERNAL_SEGMENT_BYTES, LONG_MAX, TOPIC_CONFIGS, ConfigType, LogConfig, TopicConfigDef
from tierlog.storage.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache
from tierlog.storage.errors import (
    CorruptCheckpointError,
    CorruptIndexError,
    InconsistentTopicIdError,
    InvalidRecordError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    UnexpectedAppendOffsetError,
)
from tierlog.storage.log import Log, SegmentInfo
from tierlog.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager
from tierlog.storage.partition_metadata import topic_id_from_str, topic_id_to_str
from tierlog.storage.results import AppendResult, FileRegion, ReadResult

__all__ = [
    "AppendResult",
    "CLEAN_SHUTDOWN_FILE",
    "ConfigType",
    "CorruptCheckpointError",
    "CorruptIndexError",
    "FileRegion",
    "INTERNAL_SEGMENT_BYTES",
    "InconsistentTopicIdError",
    "InvalidRecordError",
    "KafkaStorageError",
    "LONG_MAX",
    "LeaderEpochCache",
    "Log",
    "LogConfig",
    "LogManager",
    "OffsetOutOfRangeError",
    "ReadResult",
    "SegmentInfo",
    "TOPIC_CONFIGS",
    "TopicConfigDef",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "UnexpectedAppendOffsetError",
    "topic_id_from_str",
    "topic_id_to_str",
]
