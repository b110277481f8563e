"""ApiVersions (18), v0-4: the APIs and versions this node serves, from the handler registry.

An unsupported request version is answered by the dispatcher (v0, UNSUPPORTED_VERSION).
v3+ carries the features (KIP-584): SupportedFeatures (``transaction.version`` 0-2, ``kraft.version``
0-1: finalized 1 when the controller quorum is dynamic, KIP-853) and the
image's finalized levels with its offset as FinalizedFeaturesEpoch, from the FeatureLevelRecords
a new cluster's controller writes (``metadata.feature_records``): transaction.version 2 tells a
client that supports it to use KIP-890 part 2 (EndTxn v5, Produce v12).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.metadata.feature_records import api_versions_features
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.api_versions import (
        ApiVersionsRequest,
        ApiVersionsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.API_VERSIONS, 0, 4


def handle(broker: HandlerContext, header: RequestHeader, request: ApiVersionsRequest) -> ApiVersionsResponse:
    image = broker.image
    return {"ErrorCode": ErrorCode.NONE, "ApiKeys": broker.api_versions, "ThrottleTimeMs": 0,
            **api_versions_features(image.features, image.provenance.last_contained_offset,
                                    1 if broker.config.dynamic_quorum else 0)}
