"""DeleteShareGroupOffsets (key 92), version 0, flexible (KIP-932): forget an empty share group's
state of whole topics.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("GroupId", "string"),
    Field("Topics", [Struct([Field("TopicName", "string")], name="DeleteShareGroupOffsetsRequestTopic")]),
], name="DeleteShareGroupOffsetsRequest")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("Responses", [Struct([
        Field("TopicName", "string"),
        Field("TopicId", "uuid"),
        Field("ErrorCode", "int16"),
        Field("ErrorMessage", "string", nullable="0+", default=None),
    ], name="DeleteShareGroupOffsetsResponseTopic")]),
], name="DeleteShareGroupOffsetsResponse")

SPEC = ApiSpec(ApiKey.DELETE_SHARE_GROUP_OFFSETS, "DeleteShareGroupOffsets", 0, 0, 0, REQUEST, RESPONSE)
