"""WriteTxnMarkers (key 27), versions 0-2, flexible from 1: the transaction coordinator asks a
partition leader to append commit or abort markers (TransactionResult true = COMMIT).  v2
(KIP-1228) adds each marker's TransactionVersion: 2 means its epoch is the one the end bumped
to (KIP-890 part 2), which the leader checks strictly."""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_TOPIC = Struct([
    Field("Name", "string"),
    Field("PartitionIndexes", ["int32"]),
], name="WritableTxnMarkerTopic")

_MARKER = Struct([
    Field("ProducerId", "int64"),
    Field("ProducerEpoch", "int16"),
    Field("TransactionResult", "bool"),
    Field("Topics", [_TOPIC]),
    Field("CoordinatorEpoch", "int32"),
    Field("TransactionVersion", "int8", versions="2+", default=0),
], name="WritableTxnMarker")

REQUEST = Struct([
    Field("Markers", [_MARKER]),
], name="WriteTxnMarkersRequest")

_PARTITION_RESULT = Struct([
    Field("PartitionIndex", "int32"),
    Field("ErrorCode", "int16"),
], name="WritableTxnMarkerPartitionResult")

_TOPIC_RESULT = Struct([
    Field("Name", "string"),
    Field("Partitions", [_PARTITION_RESULT]),
], name="WritableTxnMarkerTopicResult")

_MARKER_RESULT = Struct([
    Field("ProducerId", "int64"),
    Field("Topics", [_TOPIC_RESULT]),
], name="WritableTxnMarkerResult")

RESPONSE = Struct([
    Field("Markers", [_MARKER_RESULT]),
], name="WriteTxnMarkersResponse")

SPEC = ApiSpec(ApiKey.WRITE_TXN_MARKERS, "WriteTxnMarkers", 0, 2, 1, REQUEST, RESPONSE)
