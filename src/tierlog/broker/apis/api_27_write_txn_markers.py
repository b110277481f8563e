"""WriteTxnMarkers (27), v0-2: a transaction coordinator has this broker append COMMIT or ABORT
markers to the partitions it leads (``txn_marker_writer``: one control batch per partition,
acks=all, the producer state fencing markers of an older producer epoch; v2's
TransactionVersion 2 (KIP-1228) fences one at the producer's current epoch too: a late copy of
an earlier transaction's marker).

Broker-to-broker only: CLUSTER_ACTION on the cluster, else every partition answers
CLUSTER_AUTHORIZATION_FAILED (Kafka's handleWriteTxnMarkersRequest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from ..txn_marker_writer import marker_of, result_of, write_markers
from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.write_txn_markers import (
        WriteTxnMarkersRequest,
        WriteTxnMarkersResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.WRITE_TXN_MARKERS, 0, 2


async def handle(broker: HandlerContext, header: RequestHeader, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    if not authz.cluster(broker, header, authz.Op.CLUSTER_ACTION):
        return {"Markers": [{"ProducerId": m["ProducerId"], "Topics": [
            {"Name": t["Name"], "Partitions": [
                {"PartitionIndex": i, "ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
                for i in t["PartitionIndexes"]]} for t in m["Topics"]]} for m in request["Markers"]]}
    markers = [marker_of(m) for m in request["Markers"]]
    errors = await write_markers(broker.replicas, broker.led_partition, markers,
                                 broker.config["request.timeout.ms"], broker.clock_ms(), broker.groups.on_txn_marker)
    return {"Markers": [result_of(m, e) for m, e in zip(markers, errors, strict=True)]}
