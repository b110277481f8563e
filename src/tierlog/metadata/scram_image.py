"""The SCRAM part of the metadata image (Kafka's ScramImage): per mechanism and user the
stored credential, from UserScramCredentialRecords / RemoveUserScramCredentialRecords.

Immutable: ``with_changes`` builds the next one. Brokers authenticate SCRAM clients from
it (``credential``) and answer DescribeUserScramCredentials (``describe``); the controller
checks AlterUserScramCredentials deletions against it; snapshots write ``records()``.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from tierlog.protocol.errors import ErrorCode

from .scram import ScramCredential, ScramMechanism
from .scram_records import UserScramCredentialRecord

if TYPE_CHECKING:
    from tierlog.protocol.typed.describe_user_scram_credentials import (
        DescribeUserScramCredentialsResult,
    )

__all__ = ["DESCRIBE_DUPLICATE_USER", "DESCRIBE_USER_THAT_DOES_NOT_EXIST", "ScramImage", "credential_of"]

# Kafka's messages (ScramImage)
DESCRIBE_USER_THAT_DOES_NOT_EXIST = "Attempt to describe a user credential that does not exist: "
DESCRIBE_DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "

_EMPTY: Mapping[tuple[int, str], ScramCredential] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ScramImage:
    credentials: Mapping[tuple[int, str], ScramCredential] = field(default_factory=lambda: _EMPTY)   # by (mechanism type, user)

    def __len__(self) -> int:
        return len(self.credentials)

    def credential(self, mechanism: ScramMechanism, user: str) -> ScramCredential | None:
        return self.credentials.get((int(mechanism), user))

    def users(self) -> list[str]:
        return sorted({user for _, user in self.credentials})

    def mechanisms_of(self, user: str) -> list[tuple[int, int]]:
        """(mechanism type, iterations) of each credential ``user`` has, by mechanism."""
        return sorted((m, c.iterations) for (m, u), c in self.credentials.items() if u == user)

    def with_changes(self, changes: Mapping[tuple[int, str], ScramCredential | None]) -> ScramImage:
        """``changes``: (mechanism, user) -> ScramCredential, or None to remove."""
        if not changes:
            return self
        out = dict(self.credentials)
        for key, credential in changes.items():
            if credential is None:
                out.pop(key, None)
            else:
                out[key] = credential
        return ScramImage(MappingProxyType(out))

    def records(self) -> Iterator[UserScramCredentialRecord]:
        for (mechanism, user), c in sorted(self.credentials.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            yield UserScramCredentialRecord(user, mechanism, c.salt, c.stored_key, c.server_key, c.iterations)

    def describe(self, users: list[str] | None) -> list[DescribeUserScramCredentialsResult]:
        """DescribeUserScramCredentials' Results (Kafka's ScramImage.describe): every user when
        ``users`` is null or empty; a user asked twice is DUPLICATE_RESOURCE, one without
        credentials RESOURCE_NOT_FOUND."""
        names = users if users else self.users()
        seen: dict[str, bool] = {}
        for name in names:
            seen[name] = name in seen
        results: list[DescribeUserScramCredentialsResult] = []
        for name, duplicate in seen.items():
            infos = [] if duplicate else self.mechanisms_of(name)
            code, message = ErrorCode.NONE, None
            if duplicate:
                code, message = ErrorCode.DUPLICATE_RESOURCE, DESCRIBE_DUPLICATE_USER + name
            elif not infos:
                code, message = ErrorCode.RESOURCE_NOT_FOUND, DESCRIBE_USER_THAT_DOES_NOT_EXIST + name
            results.append({"User": name, "ErrorCode": code, "ErrorMessage": message,
                            "CredentialInfos": [{"Mechanism": m, "Iterations": i} for m, i in infos]})
        return results


def credential_of(record: UserScramCredentialRecord) -> ScramCredential:
    return ScramCredential(bytes(record.salt), bytes(record.stored_key), bytes(record.server_key), record.iterations)
