"""KIP-405 tiered storage: remote storage, remote log metadata and the sans-IO rules.

Remote storage: an ``ObjectStore`` (``FsObjectStore`` for a local directory,
``S3ObjectStore`` through boto3, built by ``object_store_from_config``) under a
``RemoteSegmentStore`` that copies, verifies, reads and deletes segments in
Kafka's layout, each described by a JSON manifest written last
(``list_partitions`` reads a store with no broker). Uploads may be encrypted at
rest (``encryption``: AES-256-GCM chunks, per-segment data keys wrapped by the
``rsm.config.encryption.*`` keys of ``encryption_config``).

Remote log metadata: Kafka's records of ``__remote_log_metadata``
(``encode_remote_log_metadata`` / ``decode_remote_log_metadata``), the topic
partition of a user partition (``metadata_partition``), and the per-partition
``RemoteLogMetadataCache`` built from those records.

Sans-IO rules, each in its own module: ``copy_rules`` (what to upload next,
where uploads stopped), ``expiration_rules`` (which remote segments expire and
the log start to set first), ``local_retention_rules`` (which local segments
may go), ``read_rules`` (where a fetch is served from; ListOffsets -2/-4/-5/-6),
``upload_epochs`` (the leader epochs and epoch checkpoint an upload carries),
``lineage`` (whether a remote segment is within the log's leader-epoch lineage),
``overlap_rules`` (which finished segments are redundant second copies).
"""

from tierlog.tiered.batch_check import (
    CheckedBatches,
    CorruptRemoteDataError,
    check_batches,
)
from tierlog.tiered.data_loss import LossKind, RemoteDataLoss
from tierlog.tiered.encrypted_objects import RemoteEncryptionKeyError
from tierlog.tiered.encryption import DecryptionError, EncryptionKeyError, KeyRing
from tierlog.tiered.encryption_config import (
    EncryptionConfigError,
    EncryptionSettings,
    encryption_from_config,
)
from tierlog.tiered.factory import (
    RemoteStorageConfigError,
    object_store_from_config,
    object_store_from_location,
)
from tierlog.tiered.fs_store import FsObjectStore
from tierlog.tiered.layout import IndexType, partition_prefix, segment_key
from tierlog.tiered.listing import PartitionListing, UnfinishedSegment, list_partitions
from tierlog.tiered.manifest import ManifestError, SegmentManifest
from tierlog.tiered.metadata_cache import ApplyResult, RemoteLogMetadataCache
from tierlog.tiered.metadata_partitioner import (
    REMOTE_LOG_METADATA_TOPIC,
    metadata_partition,
)
from tierlog.tiered.metadata_serde import (
    RemoteLogMetadataFormatError,
    decode_remote_log_metadata,
    encode_remote_log_metadata,
)
from tierlog.tiered.object_store import (
    ObjectChecksum,
    ObjectStore,
    RemoteResourceNotFoundError,
    RemoteStorageError,
)
from tierlog.tiered.s3_store import S3ObjectStore, S3Settings
from tierlog.tiered.segment_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    is_valid_partition_delete_transition,
    is_valid_segment_transition,
)
from tierlog.tiered.segment_store import (
    LogSegmentData,
    RemoteSegmentStore,
    UploadVerificationError,
)
from tierlog.tiered.verify import SegmentProblem, verify_partition

__all__ = [
    "REMOTE_LOG_METADATA_TOPIC",
    "ApplyResult",
    "CheckedBatches",
    "CorruptRemoteDataError",
    "DecryptionError",
    "EncryptionConfigError",
    "EncryptionKeyError",
    "EncryptionSettings",
    "FsObjectStore",
    "IndexType",
    "KeyRing",
    "LogSegmentData",
    "LossKind",
    "ManifestError",
    "ObjectChecksum",
    "ObjectStore",
    "PartitionListing",
    "RemoteDataLoss",
    "RemoteEncryptionKeyError",
    "RemoteLogMetadataCache",
    "RemoteLogMetadataFormatError",
    "RemoteLogSegmentId",
    "RemoteLogSegmentMetadata",
    "RemoteLogSegmentMetadataUpdate",
    "RemoteLogSegmentState",
    "RemotePartitionDeleteMetadata",
    "RemotePartitionDeleteState",
    "RemoteResourceNotFoundError",
    "RemoteSegmentStore",
    "RemoteStorageConfigError",
    "RemoteStorageError",
    "S3ObjectStore",
    "S3Settings",
    "SegmentManifest",
    "SegmentProblem",
    "TopicIdPartition",
    "UnfinishedSegment",
    "UploadVerificationError",
    "check_batches",
    "decode_remote_log_metadata",
    "encode_remote_log_metadata",
    "encryption_from_config",
    "is_valid_partition_delete_transition",
    "is_valid_segment_transition",
    "list_partitions",
    "metadata_partition",
    "object_store_from_config",
    "object_store_from_location",
    "partition_prefix",
    "segment_key",
    "verify_partition",
]
