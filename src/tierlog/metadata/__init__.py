"""Cluster metadata: the immutable image brokers read, and the store that changes it."""
from .image import BrokerInfo, MetadataImage, PartitionInfo, TopicInfo
from .local_store import LocalMetadataStore, MetadataError

__all__ = ["BrokerInfo", "MetadataImage", "PartitionInfo", "TopicInfo",
           "LocalMetadataStore", "MetadataError"]
