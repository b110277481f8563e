"""KIP-405 tiered storage: remote storage, remote log metadata and the sans-IO rules.

Remote storage: an ``ObjectStore`` (``FsObjectStore`` for a local directory,
``S3ObjectStore`` through boto3, built by ``object_store_from_config``) under a
``RemoteSegmentStore`` that copies, verifies, reads and deletes segments in
Kafka's layout, each described by a JSON manifest written last
(``list_partitions`` reads a store with no broker).
"""

from tierlog.tiered.batch_check import (
    CheckedBatches,
    CorruptRemoteDataError,
    check_batches,
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

__all__ = [
    "CheckedBatches",
    "CorruptRemoteDataError",
    "FsObjectStore",
    "IndexType",
    "LogSegmentData",
    "ManifestError",
    "ObjectChecksum",
    "ObjectStore",
    "PartitionListing",
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
    "TopicIdPartition",
    "UnfinishedSegment",
    "UploadVerificationError",
    "check_batches",
    "is_valid_partition_delete_transition",
    "is_valid_segment_transition",
    "list_partitions",
    "object_store_from_config",
    "object_store_from_location",
    "partition_prefix",
    "segment_key",
]
