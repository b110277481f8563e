"""SASL SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677; Kafka's KIP-84), both sides,
without IO.

The exchange, two SaslAuthenticate round trips::

    client-first   n,,n=<user>,r=<client nonce>
    server-first   r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<base64 ClientProof>
    server-final   v=<base64 ServerSignature>

    AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
    ClientSignature = HMAC(StoredKey, AuthMessage);  ClientProof = ClientKey XOR ClientSignature
    ServerSignature = HMAC(ServerKey, AuthMessage)

As in Kafka: no channel binding (gs2 flag ``n`` only), no SASLprep, the authzid empty or
the user, user names with ``=2C`` / ``=3D`` escapes. The server checks the proof by
recomputing StoredKey = H(ClientProof XOR ClientSignature) and comparing in constant time
(``hmac.compare_digest``); its nonce comes from ``secrets``. A user without a credential
gets a server-first with a salt derived from a per-process secret and the name (RFC 5802
section 9's advice), so an unknown user and a wrong password fail alike, at the last step.

``ScramServer`` (one per connection): ``evaluate(token) -> bytes`` until ``complete``;
any failure raises ``SaslFailure`` (the gate answers Kafka's generic message).
``ScramClient``: ``first()``, ``final(server_first)``, ``verify(server_final)``.
"""
from __future__ import annotations

import base64
import binascii
import hmac
import secrets
from collections.abc import Callable

from tierlog.metadata.scram import (
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramMechanism,
    client_key,
    hmac_of,
    salted_password,
    stored_key,
)

__all__ = ["NONCE_BYTES", "SaslFailure", "ScramClient", "ScramServer", "scram_failure_message"]

NONCE_BYTES = 24
_TOKEN_MAX_BYTES = 8192          # a SCRAM message is a few hundred bytes; more is not SCRAM
_FAKE_SALT_KEY = secrets.token_bytes(32)      # per process: fake salts of unknown users


class SaslFailure(Exception):
    """Authentication failed; the message is for the log's debug level, never for the client."""


def scram_failure_message(mechanism: ScramMechanism) -> str:
    """Kafka's answer to a failed SCRAM exchange (SaslServerAuthenticator): it names nothing
    that tells a guesser whether the user exists."""
    return ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
            f"{mechanism.mechanism_name}")


def _attributes(text: str, what: str) -> list[tuple[str, str]]:
    out = []
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if len(key) != 1 or not eq:
            raise SaslFailure(f"malformed {what}")
        out.append((key, value))
    return out


def _decode_name(text: str) -> str:
    if "=" in text.replace("=2C", "").replace("=3D", ""):
        raise SaslFailure("bad escape in user name")
    return text.replace("=2C", ",").replace("=3D", "=")


def _encode_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _b64decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SaslFailure(f"bad base64 in {what}") from None


def _text(token: bytes) -> str:
    if len(token) > _TOKEN_MAX_BYTES:
        raise SaslFailure("SCRAM message too long")
    try:
        return bytes(token).decode("utf-8")
    except UnicodeDecodeError:
        raise SaslFailure("SCRAM message is not UTF-8") from None


class ScramServer:
    """One connection's server side. ``lookup(mechanism, user)`` reads the current metadata
    image's credential (None: no such user)."""

    def __init__(self, mechanism: ScramMechanism,
                 lookup: Callable[[ScramMechanism, str], ScramCredential | None],
                 nonce: Callable[[], str] = lambda: secrets.token_urlsafe(NONCE_BYTES)):
        self.mechanism = mechanism
        self.failure_message = scram_failure_message(mechanism)
        self._lookup = lookup
        self._new_nonce = nonce
        self._step = 0
        self.complete = False
        self.user: str | None = None
        self._credential: ScramCredential | None = None
        self._first_bare = self._server_first = self._nonce = self._gs2 = ""

    def evaluate(self, token: bytes) -> bytes:
        if self._step == 0:
            self._step = 1
            return self._first(_text(token))
        if self._step == 1:
            self._step = 2
            return self._final(_text(token))
        raise SaslFailure("SCRAM exchange already finished")

    def _first(self, text: str) -> bytes:
        flag, _, rest = text.partition(",")
        authzid, _, bare = rest.partition(",")
        if flag != "n":
            raise SaslFailure("channel binding is not supported")
        attrs = _attributes(bare, "client-first message")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise SaslFailure("malformed client-first message")
        user = _decode_name(attrs[0][1])
        if authzid and authzid != "a=" + attrs[0][1]:
            raise SaslFailure("authorization id differs from the user name")
        self.user, self._gs2, self._first_bare = user, f"{flag},{authzid},", bare
        self._credential = self._lookup(self.mechanism, user)
        salt, iterations = self._salt_of(user)
        self._nonce = attrs[1][1] + self._new_nonce()
        self._server_first = f"r={self._nonce},s={base64.b64encode(salt).decode()},i={iterations}"
        return self._server_first.encode()

    def _salt_of(self, user: str) -> tuple[bytes, int]:
        c = self._credential
        if c is not None and MIN_ITERATIONS <= c.iterations <= MAX_ITERATIONS:
            return c.salt, c.iterations
        self._credential = None          # unknown user, or iterations out of bounds: fails at the proof
        return hmac.new(_FAKE_SALT_KEY, user.encode(), "sha256").digest(), DEFAULT_ITERATIONS

    def _final(self, text: str) -> bytes:
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise SaslFailure("client-final message without a proof")
        attrs = _attributes(without_proof, "client-final message")
        if len(attrs) < 2 or attrs[0][0] != "c" or attrs[1][0] != "r":
            raise SaslFailure("malformed client-final message")
        if _b64decode(attrs[0][1], "channel binding") != self._gs2.encode():
            raise SaslFailure("channel binding does not match the client-first message")
        # Kafka's ScramSaslServer checks that the nonce *ends with* the server-first one; librdkafka
        # up to 2.0 (Debian's kcat) sends the client nonce twice, <client><client><server>
        if not attrs[1][1].endswith(self._nonce):
            raise SaslFailure("nonce does not match")
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        proof = _b64decode(proof_text, "proof")
        c, self._credential = self._credential, None
        if c is None:
            hmac.compare_digest(proof, proof)        # the same work as a real check, then fail
            raise SaslFailure("no credential")
        signature = hmac_of(self.mechanism, c.stored_key, auth_message)
        if len(proof) != len(signature) or \
                not hmac.compare_digest(stored_key(self.mechanism, bytes(a ^ b for a, b in zip(proof, signature,
                                                                                          strict=True))),
                                        c.stored_key):
            raise SaslFailure("invalid client proof")
        self.complete = True
        return b"v=" + base64.b64encode(hmac_of(self.mechanism, c.server_key, auth_message))


class ScramClient:
    """The client side (nodes' inter-broker connections, the CLI, tierlog's own client)."""

    def __init__(self, mechanism: ScramMechanism, user: str, password: str, nonce: str | None = None):
        self.mechanism, self._password = mechanism, password
        self._nonce = nonce or secrets.token_urlsafe(NONCE_BYTES)
        self._first_bare = f"n={_encode_name(user)},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = _text(server_first)
        attrs = dict(_attributes(text, "server-first message"))
        if "e" in attrs:
            raise SaslFailure(f"server error: {attrs['e']}")
        nonce, salt, iterations = attrs.get("r", ""), _b64decode(attrs.get("s", ""), "salt"), attrs.get("i", "")
        if not nonce.startswith(self._nonce) or nonce == self._nonce or not iterations.isdigit():
            raise SaslFailure("malformed server-first message")
        if int(iterations) < MIN_ITERATIONS:
            raise SaslFailure(f"iterations {iterations} below the minimum {MIN_ITERATIONS}")
        salted = salted_password(self.mechanism, self._password, salt, int(iterations))
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
        auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        key = client_key(self.mechanism, salted)
        signature = hmac_of(self.mechanism, stored_key(self.mechanism, key), auth_message)
        proof = bytes(a ^ b for a, b in zip(key, signature, strict=True))
        self._server_signature = hmac_of(self.mechanism, hmac_of(self.mechanism, salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attrs = dict(_attributes(_text(server_final), "server-final message"))
        if "e" in attrs:
            raise SaslFailure(f"server error: {attrs['e']}")
        if not hmac.compare_digest(_b64decode(attrs.get("v", ""), "server signature"), self._server_signature):
            raise SaslFailure("the server's signature does not match: not the server the credentials are for")
