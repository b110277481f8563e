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
import re
from collections.abc import Mapping

from tierlog.net.security import SecurityConfigError

__all__ = ["PLAIN_LOGIN_MODULE", "PlainAuthenticator", "parse_plain_jaas"]

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
FAILED = "Authentication failed: Invalid username or password"
_OPTION = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def parse_plain_jaas(key: str, text: str) -> dict[str, str]:
    """The options of one PlainLoginModule entry (``name -> value``)."""
    body = text.strip()
    if not body.startswith(PLAIN_LOGIN_MODULE):
        raise SecurityConfigError(f"{key}: want {PLAIN_LOGIN_MODULE} required user_<name>=\"<password>\" ...;")
    body = body[len(PLAIN_LOGIN_MODULE):].strip()
    flag, _, body = body.partition(" ")
    if flag != "required":
        raise SecurityConfigError(f"{key}: the login module must be 'required'")
    body = body.strip()
    if not body.endswith(";"):
        raise SecurityConfigError(f"{key}: the JAAS entry must end with ';'")
    body, options, pos = body[:-1], {}, 0
    while pos < len(body.rstrip()):
        m = _OPTION.match(body, pos)
        if m is None:
            raise SecurityConfigError(f"{key}: cannot parse the options at {body[pos:pos + 20]!r} "
                                      '(want name="value")')
        options[m.group(1)] = re.sub(r"\\(.)", r"\1", m.group(2))
        pos = m.end()
    return options


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
