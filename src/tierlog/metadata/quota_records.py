"""Kafka's ClientQuotaRecord (metadata record 14, KIP-546 in KRaft).

One record sets or removes one quota key of one entity: the entity is a list of
(entity type, entity name) pairs, the name null for the type's default
(``user`` / ``client-id`` / ``ip``). Kafka's versions are 0-1, flexible from 1; tierlog
writes every metadata record in the flexible encoding, so it speaks version 1 only.
``cluster_records`` registers ``SCHEMAS`` (and the nested ``EntityData``) with the
other metadata records.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tierlog.protocol.schema import Field, Struct

__all__ = ["ENTITY_STRUCT", "SCHEMAS", "ClientQuotaRecord", "EntityData"]


@dataclass(frozen=True, slots=True)
class EntityData:
    entity_type: str
    entity_name: str | None      # None: the type's default entity


@dataclass(frozen=True, slots=True)
class ClientQuotaRecord:
    API_KEY: ClassVar[int] = 14
    entity: tuple[EntityData, ...]
    key: str
    value: float = 0.0
    remove: bool = False


ENTITY_STRUCT = Struct([
    Field("EntityType", "string"), Field("EntityName", "string", nullable="0+", default=None),
], name="EntityData")

SCHEMAS: dict[type, tuple[Struct, int, int]] = {
    ClientQuotaRecord: (Struct([
        Field("Entity", [ENTITY_STRUCT]), Field("Key", "string"),
        Field("Value", "float64"), Field("Remove", "bool"),
    ], name="ClientQuotaRecord"), 1, 1),
}
