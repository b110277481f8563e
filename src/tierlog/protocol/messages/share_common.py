"""Structures ShareFetch and ShareAcknowledge share (KIP-932).

Kafka's message files repeat these; here both import them.  Not an API: not in ``APIS``.
"""

from tierlog.protocol.schema import Field, Struct

__all__ = ["ACKNOWLEDGEMENT_BATCH", "LEADER_ID_AND_EPOCH", "NODE_ENDPOINT"]

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
