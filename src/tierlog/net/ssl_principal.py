"""The principal of a TLS client: its certificate's subject through ``ssl.principal.mapping.rules``.

Kafka's ``DefaultKafkaPrincipalBuilder`` / ``SslPrincipalMapper``: an SSL connection
without a client certificate is ``User:ANONYMOUS``; with one, its subject's RFC 2253
distinguished name (``CN=alice,OU=eng,O=org``: most specific first, no spaces, as
Java's ``X500Principal.getName()``) goes through the rules, first match wins:

* ``DEFAULT``: the whole DN;
* ``RULE:pattern/replacement/[L|U]``: when the Java regex ``pattern`` matches the
  whole DN, ``replacement`` (``$1`` for a group) replaces it, then lower- (L) or
  upper-cased (U).

Rules are comma-separated (``RULE:^CN=([^,]+).*$/$1/L,DEFAULT``); the default is
``DEFAULT``. A DN no rule matches fails the connection (Kafka: "No rules apply").
"""
from __future__ import annotations

import re

from cryptography import x509

from .security import SecurityConfigError

__all__ = ["ANONYMOUS", "PRINCIPAL_MAPPING_RULES", "SslPrincipalMapper", "peer_principal", "subject_dn"]

ANONYMOUS = "User:ANONYMOUS"
PRINCIPAL_MAPPING_RULES = "ssl.principal.mapping.rules"
# Kafka's RULE_PARSER: DEFAULT, or RULE:pattern/replacement/[LU] (a '/' inside escaped as '\/')
_RULE = re.compile(r"\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)")


class _Rule:
    def __init__(self, pattern: str | None, replacement: str = "", case: str = ""):
        self.pattern = None if pattern is None else re.compile(pattern)
        # Java's $n group references in Python's form; a literal '\/' is '/'
        self.replacement = re.sub(r"\$(\d)", r"\\g<\1>", replacement.replace("\\/", "/"))
        self.case = case

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        name = self.pattern.sub(self.replacement, dn)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


def _parse(text: str) -> list[_Rule]:
    rules, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _RULE.match(text, pos)
        if m is None or m.end() == pos:
            raise SecurityConfigError(f"{PRINCIPAL_MAPPING_RULES}: cannot parse {text[pos:]!r} (want DEFAULT or "
                                      "RULE:pattern/replacement/[L|U], comma-separated)")
        if m.group(1) == "DEFAULT":
            rules.append(_Rule(None))
        else:
            try:
                rules.append(_Rule(m.group(2), m.group(3), m.group(4)))
            except re.error as e:
                raise SecurityConfigError(f"{PRINCIPAL_MAPPING_RULES}: bad pattern {m.group(2)!r}: {e}") from None
        pos = m.end()
    return rules or [_Rule(None)]


class SslPrincipalMapper:
    def __init__(self, rules: str | None = None):
        self.rules = _parse(rules or "DEFAULT")

    def name(self, dn: str) -> str | None:
        """The principal name of ``dn``; None when no rule applies."""
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        return None

    def principal(self, der_certificate: bytes | None) -> str | None:
        """``User:<name>`` of a peer certificate (DER), ANONYMOUS without one, None when no rule applies."""
        if not der_certificate:
            return ANONYMOUS
        name = self.name(subject_dn(der_certificate))
        return None if name is None else f"User:{name}"


def subject_dn(der_certificate: bytes) -> str:
    """The certificate subject as RFC 2253 text (most specific first)."""
    return x509.load_der_x509_certificate(der_certificate).subject.rfc4514_string()


def peer_principal(mapper: SslPrincipalMapper):
    """What a TLS listener's ``Server`` calls per connection (``principal_of``): the principal of
    the transport's peer certificate, None when no rule applies (the connection is refused)."""
    def principal_of(transport) -> str | None:
        ssl_object = transport.get_extra_info("ssl_object")
        return mapper.principal(ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None)
    return principal_of
