"""AlterUserScramCredentials (51) on the controller, sans-IO (Kafka's ScramControlManager).

Per user, in Kafka's order and with Kafka's messages: a user named twice in one request
(deletions and upsertions together) is DUPLICATE_RESOURCE; an empty name
UNACCEPTABLE_CREDENTIAL; an unknown mechanism UNSUPPORTED_SASL_MECHANISM; iterations
outside 4096..16384 UNACCEPTABLE_CREDENTIAL ("Too few iterations" / "Too many
iterations"); deleting a credential that does not exist RESOURCE_NOT_FOUND. Accepted
deletions become RemoveUserScramCredentialRecords; accepted upsertions become
UserScramCredentialRecords whose StoredKey and ServerKey the controller derives from the
client's SaltedPassword (KIP-554): the password itself never reaches the cluster.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tierlog.metadata.cluster_records import MetadataRecord
from tierlog.metadata.image import MetadataImage
from tierlog.metadata.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramMechanism,
    credential_from_salted_password,
)
from tierlog.metadata.scram_records import (
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)
from tierlog.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from tierlog.protocol.typed.alter_user_scram_credentials import (
        AlterUserScramCredentialsRequest,
        AlterUserScramCredentialsResponse,
        AlterUserScramCredentialsResult,
    )

__all__ = ["alter_user_scram_credentials"]

_TWICE = "A user credential cannot be altered twice in the same request"


def _check_name_and_mechanism(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if ScramMechanism.by_type(mechanism) is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _check_deletion(d: Mapping[str, Any], image: MetadataImage) -> tuple[int, str] | None:
    error = _check_name_and_mechanism(d["Name"], d["Mechanism"])
    if error is None and image.scram.credentials.get((d["Mechanism"], d["Name"])) is None:
        error = ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
    return error


def _check_upsertion(u: Mapping[str, Any]) -> tuple[int, str] | None:
    error = _check_name_and_mechanism(u["Name"], u["Mechanism"])
    if error is None and u["Iterations"] < MIN_ITERATIONS:
        error = ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    elif error is None and u["Iterations"] > MAX_ITERATIONS:
        error = ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return error


def alter_user_scram_credentials(request: AlterUserScramCredentialsRequest,
                                 image: MetadataImage) -> tuple[Sequence[MetadataRecord], AlterUserScramCredentialsResponse]:
    # a deletion or an upsertion (ScramCredentialDeletion / ScramCredentialUpsertion), sorted by one loop
    deletions: dict[str, Mapping[str, Any]] = {}
    upsertions: dict[str, Mapping[str, Any]] = {}
    errors: dict[str, tuple[int, str]] = {}
    for kind, items, check in (("d", request.get("Deletions") or [], lambda x: _check_deletion(x, image)),
                               ("u", request.get("Upsertions") or [], _check_upsertion)):
        for item in items:
            name = item["Name"]
            if name in errors:
                continue
            if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
                errors[name] = ErrorCode.DUPLICATE_RESOURCE, _TWICE
                continue
            error = check(item)
            if error is not None:
                errors[name] = error
            else:
                (deletions if kind == "d" else upsertions)[name] = item
    records: list[MetadataRecord] = [RemoveUserScramCredentialRecord(d["Name"], d["Mechanism"]) for d in deletions.values()]
    for u in upsertions.values():
        mechanism = ScramMechanism(u["Mechanism"])
        c = credential_from_salted_password(mechanism, bytes(u["Salt"]), bytes(u["SaltedPassword"]), u["Iterations"])
        records.append(UserScramCredentialRecord(u["Name"], mechanism, c.salt, c.stored_key, c.server_key,
                                                 c.iterations))
    results: list[AlterUserScramCredentialsResult] = [{"User": n, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None}
                           for n in [*deletions, *upsertions]]
    results += [{"User": n, "ErrorCode": code, "ErrorMessage": msg} for n, (code, msg) in errors.items()]
    return records, {"ThrottleTimeMs": 0, "Results": results}
