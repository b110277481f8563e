"""Kafka's ACL model: resource types, pattern types, operations, permissions, bindings, filters.

Codes are Kafka's (``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``; KIP-11, KIP-290 for PREFIXED). An ACL binding is a resource
pattern (type, name, LITERAL | PREFIXED; a LITERAL ``*`` matches every name) plus an
access control entry (principal ``User:x`` or ``User:*``, host an IP or ``*``,
operation, ALLOW | DENY).

Filters (DescribeAcls, DeleteAcls) use ANY for "every value" and, for pattern types,
MATCH: every pattern that would apply to the named resource (the literal name, the
literal ``*``, and every PREFIXED pattern the name starts with) -- Kafka's
``ResourcePatternFilter.matches``. ``validate_binding`` is the controller's check of a
CreateAcls entry (Kafka's ``AclControlManager.validateNewAcl``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "InvalidAcl",
    "PatternType",
    "ResourceType",
    "binding_of",
    "filter_of",
    "validate_binding",
]

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"     # Kafka's one CLUSTER resource name


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class InvalidAcl(ValueError):
    """A binding or filter Kafka would refuse (INVALID_REQUEST with this message)."""


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


def _any_or(value: int, wanted: int | None, any_value: int) -> bool:
    return wanted == any_value or wanted is None or value == wanted


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """None (or ANY) in a field matches every value; MATCH applies to pattern types."""

    resource_type: int = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: int = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: int = AclOperation.ANY
    permission_type: int = AclPermissionType.ANY

    def matches(self, b: AclBinding) -> bool:
        return (_any_or(b.resource_type, self.resource_type, ResourceType.ANY)
                and self._pattern_matches(b)
                and (self.principal is None or b.principal == self.principal)
                and (self.host is None or b.host == self.host)
                and _any_or(b.operation, self.operation, AclOperation.ANY)
                and _any_or(b.permission_type, self.permission_type, AclPermissionType.ANY))

    def _pattern_matches(self, b: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            return self._applies_to_name(b)
        if not _any_or(b.pattern_type, self.pattern_type, PatternType.ANY):
            return False
        return self.resource_name is None or b.resource_name == self.resource_name

    def _applies_to_name(self, b: AclBinding) -> bool:
        """Kafka's MATCH: the patterns that apply to the literal resource name."""
        name = self.resource_name
        if name is None:
            return True
        if b.pattern_type == PatternType.LITERAL:
            return b.resource_name in (name, WILDCARD)
        return b.pattern_type == PatternType.PREFIXED and name.startswith(b.resource_name)

    def problem(self) -> str | None:
        """Why this filter is unusable (Kafka's ``findIndefiniteField`` for DeleteAcls), or None."""
        for label, value, unknown in (("resource type", self.resource_type, ResourceType.UNKNOWN),
                                      ("pattern type", self.pattern_type, PatternType.UNKNOWN),
                                      ("operation", self.operation, AclOperation.UNKNOWN),
                                      ("permission type", self.permission_type, AclPermissionType.UNKNOWN)):
            if value == unknown:
                return f"Unknown {label}"
        return None


def _enum_ok(enum: type[IntEnum], value: int, *refused: IntEnum) -> bool:
    try:
        member = enum(value)
    except ValueError:
        return False
    return member not in refused and member != enum["UNKNOWN"]


def validate_binding(b: AclBinding) -> None:
    """Raise InvalidAcl for a binding that cannot be stored (Kafka's validateNewAcl)."""
    if not _enum_ok(ResourceType, b.resource_type, ResourceType.ANY):
        raise InvalidAcl(f"Invalid resource type {b.resource_type}")
    if not _enum_ok(PatternType, b.pattern_type, PatternType.ANY, PatternType.MATCH):
        raise InvalidAcl(f"Invalid pattern type {b.pattern_type}")
    if not _enum_ok(AclOperation, b.operation, AclOperation.ANY):
        raise InvalidAcl(f"Invalid operation type {b.operation}")
    if not _enum_ok(AclPermissionType, b.permission_type, AclPermissionType.ANY):
        raise InvalidAcl(f"Invalid permission type {b.permission_type}")
    if not b.resource_name:
        raise InvalidAcl("Resource name should not be empty")
    if b.resource_type == ResourceType.CLUSTER and b.resource_name != CLUSTER_NAME:
        raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    kind, sep, name = b.principal.partition(":")
    if not sep or not kind or not name:
        raise InvalidAcl(f"Could not parse principal from `{b.principal}` (no colon is present "
                         f"separating the principal type from the principal name)")
    if not b.host:
        raise InvalidAcl("Invalid host: the host should not be empty")


def binding_of(creation: Mapping[str, Any]) -> AclBinding:
    """A CreateAcls creation (its wire dict) as an AclBinding (v0 has no pattern type: LITERAL)."""
    return AclBinding(creation["ResourceType"], creation["ResourceName"],
                      creation.get("ResourcePatternType", PatternType.LITERAL), creation["Principal"],
                      creation["Host"], creation["Operation"], creation["PermissionType"])


def filter_of(f: Mapping[str, Any]) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter (wire dicts) as an AclBindingFilter."""
    return AclBindingFilter(f["ResourceTypeFilter"], f["ResourceNameFilter"],
                            f.get("PatternTypeFilter", PatternType.LITERAL), f["PrincipalFilter"], f["HostFilter"],
                            f["Operation"], f["PermissionType"])
