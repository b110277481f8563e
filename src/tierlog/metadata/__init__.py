"""Cluster metadata: records, the immutable image, deltas, elections, snapshots.

``records`` (Kafka's metadata records and framing), ``image`` (MetadataImage),
``delta`` (MetadataDelta: replay records, apply -> next image), ``election``
(pure leader election, KIP-966 / KIP-1303), ``snapshot`` / ``loader`` /
``snapshot_generator`` (the Raft side). ``LocalMetadataStore`` is the
single-node store the quorum replaces.
"""
from .delta import MetadataDelta, MetadataReplayError
from .image import (
    BrokerInfo,
    MetadataImage,
    MetadataProvenance,
    PartitionInfo,
    TopicInfo,
)
from .local_store import LocalMetadataStore, MetadataError

__all__ = [
    "BrokerInfo",
    "LocalMetadataStore",
    "MetadataDelta",
    "MetadataError",
    "MetadataImage",
    "MetadataProvenance",
    "MetadataReplayError",
    "PartitionInfo",
    "TopicInfo",
]
