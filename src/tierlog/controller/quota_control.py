"""AlterClientQuotas (49) on the controller, sans-IO (Kafka's ClientQuotaControlManager).

Per entry: the entity is checked (``metadata.client_quotas.check_entity``), then each op
(``check_op``: a key the entity type takes, a positive value, a whole number for the byte
and connection rates; a key named twice is invalid). Any failure answers the entry
INVALID_REQUEST with the reason and writes nothing for it; a valid entry becomes one
ClientQuotaRecord per op (``Remove`` for a removal), unless ``ValidateOnly``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tierlog.metadata.client_quotas import (
    QuotaEntity,
    check_entity,
    check_op,
    entity_of,
)
from tierlog.metadata.cluster_records import MetadataRecord
from tierlog.metadata.quota_records import ClientQuotaRecord, EntityData
from tierlog.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from tierlog.protocol.typed.alter_client_quotas import (
        AlterClientQuotasRequest,
        AlterClientQuotasResponse,
        AlterClientQuotasResult,
    )

__all__ = ["alter_client_quotas"]


def _check_entry(entity: QuotaEntity, ops: Sequence[Mapping[str, Any]]) -> str | None:
    error = check_entity(entity)
    seen: set[str] = set()
    for op in ops:
        if error is not None:
            return error
        if op["Key"] in seen:
            return f"Quota key {op['Key']} is altered twice in one entry"
        seen.add(op["Key"])
        error = check_op(entity, op["Key"], op["Value"], op["Remove"])
    return error


def _records(entity: QuotaEntity, ops: Sequence[Mapping[str, Any]]) -> list[ClientQuotaRecord]:
    data = tuple(EntityData(t, n) for t, n in entity)
    return [ClientQuotaRecord(data, op["Key"], 0.0 if op["Remove"] else float(op["Value"]), bool(op["Remove"]))
            for op in ops]


def alter_client_quotas(request: AlterClientQuotasRequest) -> tuple[Sequence[MetadataRecord], AlterClientQuotasResponse]:
    records: list[MetadataRecord] = []
    results: list[AlterClientQuotasResult] = []
    for entry in request["Entries"]:
        entity = entity_of((e["EntityType"], e["EntityName"]) for e in entry["Entity"])
        error = _check_entry(entity, entry["Ops"])
        if error is None and not request["ValidateOnly"]:
            records += _records(entity, entry["Ops"])
        results.append({"ErrorCode": ErrorCode.NONE if error is None else ErrorCode.INVALID_REQUEST,
                        "ErrorMessage": error, "Entity": entry["Entity"]})
    return records, {"ThrottleTimeMs": 0, "Entries": results}
