"""Kafka's JAAS configuration form of SASL PLAIN (``sasl.jaas.config``, and
``listener.name.<l>.plain.sasl.jaas.config`` on nodes), without IO::

    org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="...";

Options are ``name="value"`` pairs (backslash escapes a character); the entry ends with ``;``.
"""

from __future__ import annotations

import re

from tierlog.net.security import SecurityConfigError

__all__ = ["PLAIN_LOGIN_MODULE", "parse_plain_jaas"]


PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"

_JAAS_OPTION = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')

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
        m = _JAAS_OPTION.match(body, pos)
        if m is None:
            raise SecurityConfigError(f"{key}: cannot parse the options at {body[pos:pos + 20]!r} "
                                      '(want name="value")')
        options[m.group(1)] = re.sub(r"\\(.)", r"\1", m.group(2))
        pos = m.end()
    return options
