"""The SCRAM metadata records (KIP-554 in KRaft), Kafka's keys and layouts:
UserScramCredentialRecord (11) and RemoveUserScramCredentialRecord (22), both v0,
flexible. A credential is salt, StoredKey, ServerKey and iterations: never the password.
``records`` registers ``SCHEMAS`` with the other metadata records.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from tierlog.protocol.schema import Field, Struct

__all__ = ["SCHEMAS", "RemoveUserScramCredentialRecord", "UserScramCredentialRecord"]


@dataclass(frozen=True, slots=True)
class UserScramCredentialRecord:
    API_KEY: ClassVar[int] = 11
    name: str
    mechanism: int                      # metadata.scram.ScramMechanism
    salt: bytes = field(default=b"", repr=False)
    stored_key: bytes = field(default=b"", repr=False)
    server_key: bytes = field(default=b"", repr=False)
    iterations: int = 0


@dataclass(frozen=True, slots=True)
class RemoveUserScramCredentialRecord:
    API_KEY: ClassVar[int] = 22
    name: str
    mechanism: int


SCHEMAS: dict[type, tuple[Struct, int, int]] = {
    UserScramCredentialRecord: (Struct([
        Field("Name", "string"), Field("Mechanism", "int8"), Field("Salt", "bytes"),
        Field("StoredKey", "bytes"), Field("ServerKey", "bytes"), Field("Iterations", "int32"),
    ], name="UserScramCredentialRecord"), 0, 0),
    RemoveUserScramCredentialRecord: (Struct([
        Field("Name", "string"), Field("Mechanism", "int8"),
    ], name="RemoveUserScramCredentialRecord"), 0, 0),
}
