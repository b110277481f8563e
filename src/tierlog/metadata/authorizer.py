"""Kafka's StandardAuthorizer (KIP-801), sans-IO: may this principal do this operation on this resource?

Configured as Kafka is: ``authorizer.class.name`` =
``org.apache.kafka.metadata.authorizer.StandardAuthorizer`` turns it on (unset: no
authorization at all); ``super.users`` (``;``-separated principals) pass every check;
``allow.everyone.if.no.acl.found`` (default false) decides for a resource that no ACL
names at all.

Evaluation (Kafka's ``StandardAuthorizerData.findAclRule`` / ``findResult``):

* the ACLs that apply to a resource are its LITERAL name, the LITERAL ``*`` and every
  PREFIXED pattern the name starts with, of the same resource type;
* an ACL matches when its principal is the caller's or ``User:*``, its host is the
  caller's address or ``*``, and its operation is the one asked or ALL; an ALLOW of
  READ, WRITE, DELETE or ALTER also allows DESCRIBE, and an ALLOW of ALTER_CONFIGS
  allows DESCRIBE_CONFIGS (a DENY implies nothing);
* any matching DENY wins over every ALLOW; no match denies, unless the resource has no
  ACL at all (for anyone) and ``allow.everyone.if.no.acl.found`` is true.

Cost: ``AclIndex`` keys the ACLs by (resource type, name) for LITERAL and by
(resource type, prefix) for PREFIXED patterns, with the set of prefix lengths in use,
so a check looks up one literal name, the wildcard, and one key per prefix length
present: independent of how many ACLs exist. The index is rebuilt only when the
image's ACL map changes (an identity check per request).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from tierlog.config import ConfigError

from .acls import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
)

__all__ = [
    "ALLOW_EVERYONE_IF_NO_ACL_FOUND",
    "AUTHORIZER_CLASS_NAME",
    "STANDARD_AUTHORIZER",
    "SUPER_USERS",
    "AclIndex",
    "Authorizer",
    "AuthorizerConfigError",
    "authorizer_from_config",
    "operations_bitfield",
]

AUTHORIZER_CLASS_NAME = "authorizer.class.name"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SUPER_USERS = "super.users"
ALLOW_EVERYONE_IF_NO_ACL_FOUND = "allow.everyone.if.no.acl.found"

_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                               AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


AuthorizerConfigError = ConfigError     # an authorizer setting this build cannot honour: the node refuses to start


class AclIndex:
    """The ACLs of one image keyed for lookups by resource (see the module docstring)."""

    def __init__(self, acls: Iterable[AclBinding]):
        self._literal: dict[tuple[int, str], list[AclBinding]] = {}
        self._prefixed: dict[tuple[int, str], list[AclBinding]] = {}
        self._prefix_lengths: dict[int, list[int]] = {}
        self._types_with_acls: set[int] = set()
        for b in acls:
            self._types_with_acls.add(b.resource_type)
            key = (b.resource_type, b.resource_name)
            if b.pattern_type == PatternType.PREFIXED:
                self._prefixed.setdefault(key, []).append(b)
                lengths = self._prefix_lengths.setdefault(b.resource_type, [])
                if len(b.resource_name) not in lengths:
                    lengths.append(len(b.resource_name))
            else:
                self._literal.setdefault(key, []).append(b)

    def applicable(self, resource_type: int, name: str) -> Iterator[AclBinding]:
        """Every ACL whose pattern applies to the resource (any principal, host, operation)."""
        if resource_type not in self._types_with_acls:
            return
        yield from self._literal.get((resource_type, name), ())
        if name != WILDCARD:
            yield from self._literal.get((resource_type, WILDCARD), ())
        for n in self._prefix_lengths.get(resource_type, ()):
            if n <= len(name):
                yield from self._prefixed.get((resource_type, name[:n]), ())

    def of_type(self, resource_type: int) -> Iterator[AclBinding]:
        """Every ACL on a resource type (``authorize_any``; not on a per-resource hot path)."""
        for table in (self._literal, self._prefixed):
            for (rtype, _), acls in table.items():
                if rtype == resource_type:
                    yield from acls


def _operation_matches(acl: AclBinding, op: int) -> bool:
    if acl.operation in (op, AclOperation.ALL):
        return True
    if acl.permission_type != AclPermissionType.ALLOW:
        return False            # a DENY implies nothing
    if op == AclOperation.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    return op == AclOperation.DESCRIBE_CONFIGS and acl.operation in _IMPLIES_DESCRIBE_CONFIGS


def _entry_matches(acl: AclBinding, principal: str, host: str, op: int) -> bool:
    return (acl.principal in (principal, WILDCARD_PRINCIPAL)
            and acl.host in (host, WILDCARD)
            and _operation_matches(acl, op))


class Authorizer:
    """``authorize(acls, principal, host, operation, resource_type, name)`` against an image's ACLs."""

    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False):
        self.super_users = frozenset(super_users)
        self.allow_if_no_acls = allow_everyone_if_no_acl_found
        self._cached: tuple[object, AclIndex] | None = None

    def index(self, acls: Mapping[bytes, AclBinding]) -> AclIndex:
        cached = self._cached
        if cached is None or cached[0] is not acls:
            cached = self._cached = (acls, AclIndex(acls.values()))
        return cached[1]

    def authorize(self, acls: Mapping[bytes, AclBinding], principal: str, host: str, op: int, resource_type: int,
                  name: str) -> bool:
        if principal in self.super_users:
            return True
        found_any, allowed = False, False
        for acl in self.index(acls).applicable(resource_type, name):
            found_any = True
            if _entry_matches(acl, principal, host, op):
                if acl.permission_type == AclPermissionType.DENY:
                    return False        # deny wins
                allowed = allowed or acl.permission_type == AclPermissionType.ALLOW
        return allowed or (not found_any and self.allow_if_no_acls)

    def authorize_any(self, acls: Mapping[bytes, AclBinding], principal: str, host: str, op: int, resource_type: int) -> bool:
        """Kafka's ``authorizeByResourceType`` (KIP-679), simplified: some ALLOW for ``op`` on a
        resource of the type that no DENY of the same pattern cancels."""
        if principal in self.super_users:
            return True
        matching = [a for a in self.index(acls).of_type(resource_type) if _entry_matches(a, principal, host, op)]
        denied = {(a.resource_name, a.pattern_type) for a in matching if a.permission_type == AclPermissionType.DENY}
        if (WILDCARD, PatternType.LITERAL) in denied:
            return False
        return any(a.permission_type == AclPermissionType.ALLOW and (a.resource_name, a.pattern_type) not in denied
                   for a in matching)

    def authorized_operations(self, acls: Mapping[bytes, AclBinding], principal: str, host: str, resource_type: int, name: str,
                              operations: Iterable[int]) -> int:
        """The bit set of ``operations`` allowed (Metadata / DescribeCluster authorized operations)."""
        return operations_bitfield(op for op in operations
                                   if self.authorize(acls, principal, host, op, resource_type, name))


def operations_bitfield(operations: Iterable[int]) -> int:
    """Kafka's ``Utils.to32BitField``: bit ``code`` set for each operation."""
    bits = 0
    for op in operations:
        bits |= 1 << int(op)
    return bits


def _bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v not in ("true", "false"):
        raise AuthorizerConfigError(f"{key}: want true or false, got {value!r}")
    return v == "true"


def authorizer_from_config(props: Mapping[str, str]) -> Authorizer | None:
    """The node's authorizer from Kafka's configs; None when ``authorizer.class.name`` is unset."""
    name = (props.get(AUTHORIZER_CLASS_NAME) or "").strip()
    if not name:
        return None
    if name != STANDARD_AUTHORIZER:
        raise AuthorizerConfigError(f"{AUTHORIZER_CLASS_NAME}: only {STANDARD_AUTHORIZER} is supported, "
                                    f"got {name!r}")
    users = [u.strip() for u in (props.get(SUPER_USERS) or "").split(";") if u.strip()]
    for u in users:
        if ":" not in u:
            raise AuthorizerConfigError(f"{SUPER_USERS}: {u!r} is not a principal (want e.g. User:admin)")
    allow = _bool(ALLOW_EVERYONE_IF_NO_ACL_FOUND, props.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND) or "false")
    return Authorizer(users, allow)
