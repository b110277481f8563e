"""CreateAcls (30) and DeleteAcls (31) on the active controller (Kafka's AclControlManager, KIP-801).

CreateAcls: each creation is validated (``acls.validate_binding``; a bad one answers
INVALID_REQUEST with Kafka's message, the others still apply); a binding already
stored, or created earlier in the same request, succeeds without a new record; a new
one gets an AccessControlEntryRecord under a fresh random id (the controller's seeded
rng). DeleteAcls: each filter (an unusable one answers INVALID_REQUEST) removes every
stored binding it matches, one RemoveAccessControlEntryRecord each, and lists them in
its MatchingAcls; a binding two filters match is removed once and listed by both, as
Kafka does.

Both are bounded by ``MAX_RECORDS_PER_REQUEST`` (Kafka's
``MAX_RECORDS_PER_USER_OP``, 10,000): a request that would write more answers
INVALID_REQUEST for the excess items.
"""
from __future__ import annotations

import random
from collections.abc import Container, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tierlog.metadata.acls import (
    AclBinding,
    InvalidAcl,
    binding_of,
    filter_of,
    validate_binding,
)
from tierlog.metadata.cluster_records import (
    AccessControlEntryRecord,
    MetadataRecord,
    RemoveAccessControlEntryRecord,
)
from tierlog.metadata.image import MetadataImage
from tierlog.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from tierlog.protocol.typed.create_acls import (
        AclCreationResult,
        CreateAclsRequest,
        CreateAclsResponse,
    )
    from tierlog.protocol.typed.delete_acls import (
        DeleteAclsFilterResult,
        DeleteAclsMatchingAcl,
        DeleteAclsRequest,
        DeleteAclsResponse,
    )

__all__ = ["MAX_RECORDS_PER_REQUEST", "AclControlManager", "not_controller"]

MAX_RECORDS_PER_REQUEST = 10_000
_TOO_MANY = f"More than {MAX_RECORDS_PER_REQUEST} ACL records in one request."


def _error(code: ErrorCode, message: str | None = None) -> AclCreationResult:
    return {"ErrorCode": code, "ErrorMessage": message}


def _matching(b: AclBinding, code: ErrorCode = ErrorCode.NONE) -> DeleteAclsMatchingAcl:
    return {"ErrorCode": code, "ErrorMessage": None, "ResourceType": b.resource_type,
            "ResourceName": b.resource_name, "PatternType": b.pattern_type, "Principal": b.principal,
            "Host": b.host, "Operation": b.operation, "PermissionType": b.permission_type}


class AclControlManager:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def _new_id(self, taken: Container[bytes]) -> bytes:
        while True:
            acl_id = self.rng.randbytes(16)
            if acl_id != bytes(16) and acl_id not in taken:
                return acl_id

    def create_acls(self, request: CreateAclsRequest,
                    image: MetadataImage) -> tuple[Sequence[MetadataRecord], CreateAclsResponse]:
        existing = set(image.acls.values())
        records: list[AccessControlEntryRecord] = []
        results: list[AclCreationResult] = []
        for creation in request["Creations"]:
            b = binding_of(creation)
            try:
                validate_binding(b)
            except InvalidAcl as e:
                results.append(_error(ErrorCode.INVALID_REQUEST, str(e)))
                continue
            if b not in existing:
                if len(records) >= MAX_RECORDS_PER_REQUEST:
                    results.append(_error(ErrorCode.INVALID_REQUEST, _TOO_MANY))
                    continue
                existing.add(b)
                records.append(AccessControlEntryRecord.of(self._new_id(image.acls), b))
            results.append(_error(ErrorCode.NONE))
        return records, {"ThrottleTimeMs": 0, "Results": results}

    def delete_acls(self, request: DeleteAclsRequest,
                    image: MetadataImage) -> tuple[Sequence[MetadataRecord], DeleteAclsResponse]:
        removed: set[bytes] = set()
        records: list[RemoveAccessControlEntryRecord] = []
        results: list[DeleteAclsFilterResult] = []
        for raw in request["Filters"]:
            f = filter_of(raw)
            problem = f.problem()
            if problem is not None:
                results.append({**_error(ErrorCode.INVALID_REQUEST, problem), "MatchingAcls": []})
                continue
            matches = [(acl_id, b) for acl_id, b in image.acls.items() if f.matches(b)]
            fresh = [acl_id for acl_id, _ in matches if acl_id not in removed]
            if len(records) + len(fresh) > MAX_RECORDS_PER_REQUEST:
                results.append({**_error(ErrorCode.INVALID_REQUEST, _TOO_MANY), "MatchingAcls": []})
                continue
            removed.update(fresh)
            records.extend(RemoveAccessControlEntryRecord(acl_id) for acl_id in fresh)
            results.append({**_error(ErrorCode.NONE), "MatchingAcls": [_matching(b) for _, b in matches]})
        return records, {"ThrottleTimeMs": 0, "FilterResults": results}


def not_controller(api_key_is_create: bool, request: Mapping[str, Any],
                   nc: ErrorCode = ErrorCode.NOT_CONTROLLER) -> dict[str, Any]:
    """The NOT_CONTROLLER (or ``nc``) answer of CreateAcls / DeleteAcls."""
    if api_key_is_create:
        return {"ThrottleTimeMs": 0, "Results": [_error(nc) for _ in request["Creations"]]}
    return {"ThrottleTimeMs": 0, "FilterResults": [{**_error(nc), "MatchingAcls": []} for _ in request["Filters"]]}
