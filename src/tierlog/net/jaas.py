"""Kafka's JAAS configuration form of SASL PLAIN and SCRAM (``sasl.jaas.config``, and
``listener.name.<l>.<mechanism>.sasl.jaas.config`` on nodes), without IO::

    org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="...";
    org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="...";

Options are ``name="value"`` pairs (backslash escapes a character); the entry ends with ``;``.
"""

from __future__ import annotations

import re

from tierlog.net.security import SecurityConfigError

__all__ = ["PLAIN_LOGIN_MODULE", "SCRAM_LOGIN_MODULE", "login_module", "parse_jaas", "parse_plain_jaas"]


PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


def login_module(mechanism: str) -> str:
    """Kafka's login module of a SASL mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)."""
    return PLAIN_LOGIN_MODULE if mechanism == "PLAIN" else SCRAM_LOGIN_MODULE


def parse_jaas(key: str, text: str, mechanism: str) -> dict[str, str]:
    """The options of one login module entry for ``mechanism``."""
    return _parse(key, text, login_module(mechanism))

_JAAS_OPTION = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')

def parse_plain_jaas(key: str, text: str) -> dict[str, str]:
    """The options of one PlainLoginModule entry (``name -> value``)."""
    return _parse(key, text, PLAIN_LOGIN_MODULE)


def _parse(key: str, text: str, module: str) -> dict[str, str]:
    body = text.strip()
    if not body.startswith(module):
        example = 'user_<name>="<password>" ...' if module == PLAIN_LOGIN_MODULE else 'username="..." password="..."'
        raise SecurityConfigError(f"{key}: want {module} required {example};")
    body = body[len(module):].strip()
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
