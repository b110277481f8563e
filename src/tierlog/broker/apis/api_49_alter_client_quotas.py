"""AlterClientQuotas (49), v0-1 (KIP-546): forwarded to the active controller, as a KRaft
broker does (``controller.quota_control`` checks each entry and writes ClientQuotaRecords).

Once the controller answers, the broker waits (at most ``forward.IMAGE_WAIT_MAX_S``)
until its own image shows every accepted change, so the quota holds on this broker at
once. No controller in time: REQUEST_TIMED_OUT per entry. Needs ALTER_CONFIGS on the
cluster (else CLUSTER_AUTHORIZATION_FAILED per entry, as Kafka).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tierlog.metadata.client_quotas import entity_of
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response
from .forward import TIMED_OUT_MESSAGE, forward_and_wait

if TYPE_CHECKING:
    from tierlog.metadata import MetadataImage
    from tierlog.protocol.typed.alter_client_quotas import (
        AlterClientQuotasRequest,
        AlterClientQuotasResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.ALTER_CLIENT_QUOTAS, 0, 1


def handle(broker: HandlerContext, header: RequestHeader,
           request: AlterClientQuotasRequest) -> Response[AlterClientQuotasResponse]:
    if not authz.cluster(broker, header, authz.Op.ALTER_CONFIGS):
        return _every_entry(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    if request["ValidateOnly"]:
        return forward_and_wait(broker, header, request, None, 0, _timed_out)
    return forward_and_wait(broker, header, request, lambda response: _shown(request, response), 0, _timed_out)


def _shown(request: AlterClientQuotasRequest, response: Any):
    """Whether an image holds every change the controller accepted."""
    wanted = []
    for entry, result in zip(request["Entries"], response["Entries"], strict=True):
        if result["ErrorCode"] == ErrorCode.NONE:
            entity = entity_of((e["EntityType"], e["EntityName"]) for e in entry["Entity"])
            wanted += [(entity, op["Key"], None if op["Remove"] else op["Value"]) for op in entry["Ops"]]

    def holds(image: MetadataImage) -> bool:
        entities = image.client_quotas.entities
        return all((entities.get(entity) or {}).get(key) == value for entity, key, value in wanted)
    return holds


def _timed_out(request: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    return _every_entry(request, ErrorCode.REQUEST_TIMED_OUT, TIMED_OUT_MESSAGE)


def _every_entry(request: AlterClientQuotasRequest, code: int, message: str | None) -> AlterClientQuotasResponse:
    return {"ThrottleTimeMs": 0, "Entries": [{"ErrorCode": code, "ErrorMessage": message, "Entity": e["Entity"]}
                                             for e in request["Entries"]]}
