"""Cluster metadata: records, the immutable image, deltas, elections, snapshots.

``records`` (Kafka's metadata records and framing), ``image`` (MetadataImage),
``delta`` (MetadataDelta: replay records, apply -> next image), ``election``
(pure leader election, KIP-966 / KIP-1303), ``snapshot`` / ``loader`` /
``snapshot_generator`` (the Raft side).
"""
from .delta import MetadataDelta, MetadataReplayError
from .image import (
    BrokerInfo,
    MetadataImage,
    MetadataProvenance,
    PartitionInfo,
    TopicInfo,
)

__all__ = [
    "BrokerInfo",
    "MetadataDelta",
    "MetadataImage",
    "MetadataProvenance",
    "MetadataReplayError",
    "PartitionInfo",
    "TopicInfo",
]
