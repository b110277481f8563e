"""AllocateProducerIds (67): blocks of producer ids, one ProducerIdsRecord each.

A registered, unfenced broker with its current epoch gets the next block of
``PRODUCER_ID_BLOCK_SIZE`` (1000) ids; the record stores the first id no one
has had yet, so a new active controller continues after every committed block.
Errors: BROKER_ID_NOT_REGISTERED, STALE_BROKER_EPOCH (other epoch, or fenced).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tierlog.metadata.cluster_records import MetadataRecord, ProducerIdsRecord
from tierlog.metadata.image import MetadataImage
from tierlog.protocol.errors import ErrorCode

from .cluster_control import check_broker_epoch
from .controller_config import PRODUCER_ID_BLOCK_SIZE

if TYPE_CHECKING:
    from tierlog.protocol.typed.allocate_producer_ids import (
        AllocateProducerIdsRequest,
        AllocateProducerIdsResponse,
    )

__all__ = ["allocate_producer_ids"]

_MAX_PRODUCER_ID = 2**63 - 1


def allocate_producer_ids(request: AllocateProducerIdsRequest,
                          image: MetadataImage) -> tuple[Sequence[MetadataRecord], AllocateProducerIdsResponse]:
    error = check_broker_epoch(image, request["BrokerId"], request["BrokerEpoch"], fenced_is_stale=True)
    if error:
        return [], _response(error)
    reg = image.brokers[request["BrokerId"]]
    start = image.next_producer_id
    if start > _MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
        return [], _response(ErrorCode.UNKNOWN_SERVER_ERROR)      # exhausted: Kafka fails the same way
    record = ProducerIdsRecord(broker_id=reg.node_id, broker_epoch=reg.epoch,
                               next_producer_id=start + PRODUCER_ID_BLOCK_SIZE)
    return [record], {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ProducerIdStart": start,
                      "ProducerIdLen": PRODUCER_ID_BLOCK_SIZE}


def _response(code: int) -> AllocateProducerIdsResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ProducerIdStart": -1, "ProducerIdLen": 0}
