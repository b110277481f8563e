"""Structures the Raft quorum messages share (KIP-595, with KIP-853's v1 endpoints).

Kafka's message files repeat these; here Vote, BeginQuorumEpoch,
EndQuorumEpoch and FetchSnapshot import them.  Not an API: not in ``APIS``.
"""

from tierlog.protocol.schema import Field, Struct

__all__ = ["LEADER_ENDPOINT", "NODE_ENDPOINT", "epoch_response_topic"]

# KIP-853: the leader's listeners, sent by a new leader (BeginQuorumEpoch, EndQuorumEpoch v1)
LEADER_ENDPOINT = Struct([
    Field("Name", "string", versions="1+"),
    Field("Host", "string", versions="1+"),
    Field("Port", "uint16", versions="1+"),
], name="LeaderEndpoint")

# KIP-853: NodeEndpoints (tag 0) of the v1 responses
NODE_ENDPOINT = Struct([
    Field("NodeId", "int32", versions="1+"),
    Field("Host", "string", versions="1+"),
    Field("Port", "uint16", versions="1+"),
], name="NodeEndpoint")


def epoch_response_topic(message: str) -> Struct:
    """The response TopicData of BeginQuorumEpoch / EndQuorumEpoch (``message`` names the structs)."""
    partition = Struct([
        Field("PartitionIndex", "int32"),
        Field("ErrorCode", "int16"),
        Field("LeaderId", "int32"),
        Field("LeaderEpoch", "int32"),
    ], name=f"{message}ResponsePartitionData")
    return Struct([
        Field("TopicName", "string"),
        Field("Partitions", [partition]),
    ], name=f"{message}ResponseTopicData")
