"""SCRAM credentials (RFC 5802, RFC 7677; Kafka's KIP-84 / KIP-554), without IO.

A credential is what the cluster stores for one user and one mechanism: the salt, the
iteration count, ``StoredKey`` and ``ServerKey``; never the password::

    SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)
    ClientKey      = HMAC(SaltedPassword, "Client Key")
    StoredKey      = H(ClientKey)
    ServerKey      = HMAC(SaltedPassword, "Server Key")

Mechanism codes are Kafka's ``ScramMechanism`` types (SCRAM-SHA-256 = 1, SCRAM-SHA-512 = 2),
as UserScramCredentialRecord and the SCRAM admin APIs carry them. Iterations are
``MIN_ITERATIONS`` (4096, Kafka's ScramMechanism.minIterations) to ``MAX_ITERATIONS``
(16384, Kafka's ScramControlManager.MAX_ITERATIONS).
"""
from __future__ import annotations

import enum
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_ITERATIONS",
    "MAX_ITERATIONS",
    "MIN_ITERATIONS",
    "SALT_BYTES",
    "ScramCredential",
    "ScramMechanism",
    "client_key",
    "credential_from_salted_password",
    "hmac_of",
    "new_credential",
    "salted_password",
    "stored_key",
]

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096          # kafka-configs.sh's default
SALT_BYTES = 32


class ScramMechanism(enum.IntEnum):
    """Kafka's ``ScramMechanism`` types; ``.mechanism_name`` is the SASL name."""

    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @classmethod
    def by_name(cls, name: str) -> ScramMechanism | None:
        return next((m for m in cls if m.mechanism_name == name.strip().upper()), None)

    @classmethod
    def by_type(cls, code: int) -> ScramMechanism | None:
        return next((m for m in cls if m.value == code), None)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """One user's stored credential for one mechanism (the keys never appear in a repr)."""

    salt: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int


def hmac_of(mechanism: ScramMechanism, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, mechanism.hash_name).digest()


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) of RFC 5802: PBKDF2 with HMAC-H (no SASLprep, as Kafka)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)


def client_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return hmac_of(mechanism, salted, b"Client Key")


def stored_key(mechanism: ScramMechanism, key: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, key).digest()


def credential_from_salted_password(mechanism: ScramMechanism, salt: bytes, salted: bytes,
                                    iterations: int) -> ScramCredential:
    """What the controller stores from AlterUserScramCredentials' SaltedPassword (KIP-554)."""
    return ScramCredential(bytes(salt), stored_key(mechanism, client_key(mechanism, salted)),
                           hmac_of(mechanism, salted, b"Server Key"), iterations)


def new_credential(mechanism: ScramMechanism, password: str, iterations: int = DEFAULT_ITERATIONS,
                   salt: bytes | None = None) -> ScramCredential:
    """A credential for ``password`` with a fresh random salt (``secrets``)."""
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    return credential_from_salted_password(mechanism, salt, salted_password(mechanism, password, salt, iterations),
                                           iterations)
