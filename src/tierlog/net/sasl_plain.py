"""SASL PLAIN (RFC 4616) on the server side, without IO.

The listener's users come from Kafka's JAAS form of
``listener.name.<l>.plain.sasl.jaas.config``::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";

(``user_<name>="<password>"`` entries are the users, as Kafka's
PlainServerCallbackHandler reads them; ``username`` / ``password`` are the node's
own credentials for its outbound connections.) A client token is
``authzid NUL authcid NUL passwd``; the authzid must be empty or the user.
Passwords are compared in constant time; a failure says nothing about which part
was wrong (Kafka's message: "Invalid username or password").
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from tierlog.net.jaas import PLAIN_LOGIN_MODULE, parse_plain_jaas
from tierlog.net.security import SecurityConfigError

__all__ = ["PLAIN_LOGIN_MODULE", "PlainAuthenticator", "parse_plain_jaas"]

FAILED = "Authentication failed: Invalid username or password"


class PlainAuthenticator:
    """Checks PLAIN tokens against ``users`` (name -> password)."""

    def __init__(self, users: Mapping[str, str]):
        self._users = dict(users)

    @classmethod
    def from_jaas(cls, key: str, text: str) -> PlainAuthenticator:
        users = {k[5:]: v for k, v in parse_plain_jaas(key, text).items() if k.startswith("user_")}
        if not users:
            raise SecurityConfigError(f"{key}: no users (user_<name>=\"<password>\" entries)")
        return cls(users)

    def authenticate(self, token: bytes) -> str | None:
        """The authenticated user name, or None (malformed token, unknown user, wrong password)."""
        parts = bytes(token).split(b"\x00")
        if len(parts) != 3:
            return None
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            return None
        if not user or (authzid and authzid != user):
            return None
        expected = self._users.get(user)
        # compare against something of the same kind when the user is unknown: no timing hint
        ok = hmac.compare_digest((expected or "\x00unknown").encode(), password.encode())
        return user if ok and expected is not None else None
