"""Finalized feature levels (KIP-584 in KRaft): Kafka's FeatureLevelRecord (12), v0, flexible.

Each record sets one feature's finalized level; level 0 removes it. tierlog knows two
features: ``transaction.version`` (KIP-890 part 2: 2 means clients end every transaction
with an epoch bump, EndTxn v5, and let the leaders add their partitions, Produce v12) and
``share.version`` (KIP-932: 1 means share groups are served, as Kafka 4.2 finalizes it).
A new cluster's first active controller writes ``DEFAULT_FEATURE_LEVELS`` with its
bootstrap records (``with_default_features``, added by the node to what ``tierlog format`` wrote), as ``kafka-storage format`` of
Kafka 4.x does (transaction.version 2 for a 4.0 cluster, share.version 1 for 4.2).
``records`` registers ``SCHEMAS`` with the other metadata records.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from tierlog.protocol.schema import Field, Struct

if TYPE_CHECKING:
    from tierlog.protocol.typed.api_versions import ApiVersionsResponse

    from .cluster_records import MetadataRecord  # which imports this module's schemas

__all__ = ["DEFAULT_FEATURE_LEVELS", "KRAFT_VERSION", "SCHEMAS", "SHARE_VERSION", "SUPPORTED_FEATURES",
           "TRANSACTION_VERSION", "FeatureLevelRecord", "api_versions_features", "with_default_features"]

TRANSACTION_VERSION = "transaction.version"
SHARE_VERSION = "share.version"
#: KIP-853: 0 a static controller quorum (controller.quorum.voters), 1 a dynamic one. Its level is
#: the metadata log's KRaftVersionRecord (the Raft replica's), not a FeatureLevelRecord.
KRAFT_VERSION = "kraft.version"
#: feature -> (min, max) level this build supports (ApiVersions SupportedFeatures)
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {KRAFT_VERSION: (0, 1), TRANSACTION_VERSION: (0, 2),
                                                  SHARE_VERSION: (0, 1)}


@dataclass(frozen=True, slots=True)
class FeatureLevelRecord:
    API_KEY: ClassVar[int] = 12
    name: str
    feature_level: int


DEFAULT_FEATURE_LEVELS = (FeatureLevelRecord(TRANSACTION_VERSION, 2), FeatureLevelRecord(SHARE_VERSION, 1))

SCHEMAS: dict[type, tuple[Struct, int, int]] = {
    FeatureLevelRecord: (Struct([
        Field("Name", "string"), Field("FeatureLevel", "int16"),
    ], name="FeatureLevelRecord"), 0, 0),
}


def with_default_features(records: list[MetadataRecord]) -> list[MetadataRecord]:
    """Bootstrap ``records`` and the default feature levels they do not set."""
    named = {r.name for r in records if isinstance(r, FeatureLevelRecord)}
    return records + [r for r in DEFAULT_FEATURE_LEVELS if r.name not in named]


def api_versions_features(finalized: Mapping[str, int], epoch: int, kraft_version: int = 0) -> ApiVersionsResponse:
    """ApiVersions v3+'s feature fields (KIP-584): what this build supports, and the image's
    finalized levels (min = max = the level, as Kafka answers) at ``epoch`` (the image's offset),
    with ``kraft.version`` when the quorum is dynamic (level 1)."""
    if kraft_version > 0:
        finalized = {**finalized, KRAFT_VERSION: kraft_version}
    return {"SupportedFeatures": [{"Name": n, "MinVersion": lo, "MaxVersion": hi}
                                  for n, (lo, hi) in sorted(SUPPORTED_FEATURES.items())],
            "FinalizedFeaturesEpoch": epoch,
            "FinalizedFeatures": [{"Name": n, "MaxVersionLevel": level, "MinVersionLevel": level}
                                  for n, level in sorted(finalized.items())]}
