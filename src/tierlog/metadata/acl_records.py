"""The KRaft ACL records (KIP-801): AccessControlEntryRecord (18) and RemoveAccessControlEntryRecord (19).

Kafka's layouts, version 0, flexible: an ACL is stored under a controller-chosen
``Id`` (uuid) with the binding's fields; removing it names only the ``Id``.
``metadata.cluster_records`` registers these schemas with the rest of the metadata records.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tierlog.protocol.schema import Field, Struct

from .acls import AclBinding

__all__ = ["ACL_SCHEMAS", "AccessControlEntryRecord", "RemoveAccessControlEntryRecord"]


@dataclass(frozen=True, slots=True)
class AccessControlEntryRecord:
    API_KEY: ClassVar[int] = 18
    id: bytes
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def binding(self) -> AclBinding:
        return AclBinding(self.resource_type, self.resource_name, self.pattern_type, self.principal,
                          self.host, self.operation, self.permission_type)

    @classmethod
    def of(cls, acl_id: bytes, b: AclBinding) -> AccessControlEntryRecord:
        return cls(acl_id, b.resource_type, b.resource_name, b.pattern_type, b.principal, b.host,
                   b.operation, b.permission_type)


@dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord:
    API_KEY: ClassVar[int] = 19
    id: bytes


ACL_SCHEMAS: dict[type, tuple[Struct, int, int]] = {
    AccessControlEntryRecord: (Struct([
        Field("Id", "uuid"),
        Field("ResourceType", "int8"),
        Field("ResourceName", "string"),
        Field("PatternType", "int8"),
        Field("Principal", "string"),
        Field("Host", "string"),
        Field("Operation", "int8"),
        Field("PermissionType", "int8"),
    ], name="AccessControlEntryRecord"), 0, 0),
    RemoveAccessControlEntryRecord: (Struct([Field("Id", "uuid")], name="RemoveAccessControlEntryRecord"), 0, 0),
}
