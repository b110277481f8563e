"""Durable segmented log per partition, in Kafka's on-disk layout.

``Log`` is one partition (append / read / flush / retention / truncation / epoch
cache / recovery); ``LogManager`` owns every log of a node across its log
directories; ``LogConfig`` resolves topic configs (``TOPIC_CONFIGS`` lists them).
"""

from tierlog.storage.cleaner_threads import CleanerConfig
from tierlog.storage.epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    LeaderEpochCache,
)
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
from tierlog.storage.log_config import (
    INTERNAL_SEGMENT_BYTES,
    LONG_MAX,
    TOPIC_CONFIGS,
    ConfigType,
    LogConfig,
    TopicConfigDef,
)
from tierlog.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager
from tierlog.storage.partition_metadata import topic_id_from_str, topic_id_to_str
from tierlog.storage.producer_state import ProducerStateError
from tierlog.storage.results import AppendResult, FileRegion, ReadResult, RolledSegment

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "INTERNAL_SEGMENT_BYTES",
    "LONG_MAX",
    "TOPIC_CONFIGS",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "AppendResult",
    "CleanerConfig",
    "ConfigType",
    "CorruptCheckpointError",
    "CorruptIndexError",
    "FileRegion",
    "InconsistentTopicIdError",
    "InvalidRecordError",
    "KafkaStorageError",
    "LeaderEpochCache",
    "Log",
    "LogConfig",
    "LogManager",
    "OffsetOutOfRangeError",
    "ProducerStateError",
    "ReadResult",
    "RolledSegment",
    "SegmentInfo",
    "TopicConfigDef",
    "UnexpectedAppendOffsetError",
    "topic_id_from_str",
    "topic_id_to_str",
]
