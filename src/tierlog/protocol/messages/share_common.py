"""Structures ShareFetch and ShareAcknowledge share (KIP-932).

Kafka's message files repeat these; here they import them (ShareFetch, ShareAcknowledge, and the
share coordinator's inter-broker APIs 83-87).  Not an API: not in ``APIS``.
"""

from tierlog.protocol.schema import Field, Struct

__all__ = ["ACKNOWLEDGEMENT_BATCH", "LEADER_ID_AND_EPOCH", "NODE_ENDPOINT", "STATE_BATCH", "state_request",
           "state_response"]

#: first and last offset (inclusive) and one type per offset, or one for all:
#: 0 gap, 1 accept, 2 release, 3 reject, 4 renew (v2)
ACKNOWLEDGEMENT_BATCH = Struct([
    Field("FirstOffset", "int64"),
    Field("LastOffset", "int64"),
    Field("AcknowledgeTypes", ["int8"]),
], name="AcknowledgementBatch")

LEADER_ID_AND_EPOCH = Struct([
    Field("LeaderId", "int32"),
    Field("LeaderEpoch", "int32"),
], name="LeaderIdAndEpoch")

NODE_ENDPOINT = Struct([
    Field("NodeId", "int32"),
    Field("Host", "string"),
    Field("Port", "int32"),
    Field("Rack", "string", nullable="0+", default=None),
], name="NodeEndpoint")

#: a persisted range of one delivery state: 0 available, 2 acknowledged, 4 archived
STATE_BATCH = Struct([
    Field("FirstOffset", "int64"),
    Field("LastOffset", "int64"),
    Field("DeliveryState", "int8"),
    Field("DeliveryCount", "int16"),
], name="StateBatch")


def state_request(name: str, partition_fields: list[Field]) -> Struct:
    """A share-state request: {GroupId, Topics [{TopicId, Partitions [{Partition, ...}]}]}."""
    partition = Struct([Field("Partition", "int32"), *partition_fields], name="StatePartitionData")
    topic = Struct([Field("TopicId", "uuid"), Field("Partitions", [partition])], name="StateData")
    return Struct([Field("GroupId", "string"), Field("Topics", [topic])], name=name)


def state_response(name: str, partition_fields: list[Field]) -> Struct:
    """A share-state response: {Results [{TopicId, Partitions [{Partition, ErrorCode, ErrorMessage, ...}]}]}."""
    partition = Struct([Field("Partition", "int32"), Field("ErrorCode", "int16"),
                        Field("ErrorMessage", "string", nullable="0+", default=None), *partition_fields],
                       name="StatePartitionResult")
    result = Struct([Field("TopicId", "uuid"), Field("Partitions", [partition])], name="StateResult")
    return Struct([Field("Results", [result])], name=name)
