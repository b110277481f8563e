"""DeleteTopics (key 20), versions 0-6, flexible from 4.

v1 ThrottleTimeMs; v5 ErrorMessage; v6 names or ids in Topics replace
TopicNames, and results carry TopicId with a nullable Name.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_TOPIC_STATE = Struct([
    Field("Name", "string", versions="6+", nullable="6+", default=None),
    Field("TopicId", "uuid", versions="6+"),
], name="DeleteTopicState")

REQUEST = Struct([
    Field("Topics", [_TOPIC_STATE], versions="6+"),
    Field("TopicNames", ["string"], versions="0-5"),
    Field("TimeoutMs", "int32"),
], name="DeleteTopicsRequest")

_RESULT = Struct([
    Field("Name", "string", nullable="6+"),
    Field("TopicId", "uuid", versions="6+"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", versions="5+", nullable="5+", default=None),
], name="DeletableTopicResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="1+"),
    Field("Responses", [_RESULT]),
], name="DeleteTopicsResponse")

SPEC = ApiSpec(ApiKey.DELETE_TOPICS, "DeleteTopics", 0, 6, 4, REQUEST, RESPONSE)
