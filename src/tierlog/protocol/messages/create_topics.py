"""CreateTopics (key 19), versions 0-7, flexible from 5.

v1 validateOnly and ErrorMessage; v2 ThrottleTimeMs; v5 returns the created
topic's partitions, replication factor and configs (TopicConfigErrorCode tag
0); v7 TopicId. Kafka spells the request's ``timeoutMs`` and ``validateOnly``
in lower camel case, and so do we.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_ASSIGNMENT = Struct([
    Field("PartitionIndex", "int32"),
    Field("BrokerIds", ["int32"]),
], name="CreatableReplicaAssignment")

_CONFIG = Struct([
    Field("Name", "string"),
    Field("Value", "string", nullable="0+"),
], name="CreatableTopicConfig")

_TOPIC = Struct([
    Field("Name", "string"),
    Field("NumPartitions", "int32"),
    Field("ReplicationFactor", "int16"),
    Field("Assignments", [_ASSIGNMENT]),
    Field("Configs", [_CONFIG]),
], name="CreatableTopic")

REQUEST = Struct([
    Field("Topics", [_TOPIC]),
    Field("timeoutMs", "int32", default=60000),
    Field("validateOnly", "bool", versions="1+", default=False),
], name="CreateTopicsRequest")

_RESULT_CONFIG = Struct([
    Field("Name", "string", versions="5+"),
    Field("Value", "string", versions="5+", nullable="5+"),
    Field("ReadOnly", "bool", versions="5+"),
    Field("ConfigSource", "int8", versions="5+", default=-1),
    Field("IsSensitive", "bool", versions="5+"),
], name="CreatableTopicConfigs")

_RESULT = Struct([
    Field("Name", "string"),
    Field("TopicId", "uuid", versions="7+"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", versions="1+", nullable="0+"),
    Field("TopicConfigErrorCode", "int16", versions="5+", tag=0),
    Field("NumPartitions", "int32", versions="5+", default=-1),
    Field("ReplicationFactor", "int16", versions="5+", default=-1),
    Field("Configs", [_RESULT_CONFIG], versions="5+", nullable="5+"),
], name="CreatableTopicResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32", versions="2+"),
    Field("Topics", [_RESULT]),
], name="CreateTopicsResponse")

SPEC = ApiSpec(ApiKey.CREATE_TOPICS, "CreateTopics", 0, 7, 5, REQUEST, RESPONSE)
