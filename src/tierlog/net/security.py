"""Security specs without IO, the types: which protocol a listener or a connection speaks
(``Security``: Kafka's ``SecurityProtocol`` id, which broker registrations carry, its TLS
``SslSettings`` and, outbound, its SASL ``SaslCredentials``), and the rules of Kafka's
``ssl.*`` values (``ssl_settings``).

Built from Kafka's configs by ``net.node_security`` (a node's listeners and its
connections to other nodes) and ``net.client_security`` (client properties: the CLI,
tierlog's client, the Spark source). Nothing is silently ignored: a setting tierlog
cannot honour, a value outside what Kafka allows, or SSL / SASL without what it needs
raises ``SecurityConfigError`` (a ``ValueError``) with a one-line message naming the key.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = [
    "CLIENT_AUTH",
    "NODE_SSL_KEYS",
    "PLAINTEXT",
    "SASL_MECHANISMS",
    "SSL_KEYS",
    "TLS_VERSIONS",
    "SaslCredentials",
    "Security",
    "SecurityConfigError",
    "SecurityProtocol",
    "SslSettings",
    "check_ssl_protocol",
    "listener_prefix",
    "parse_boolean",
    "ssl_settings",
]


class SecurityConfigError(ValueError):
    """A security setting is missing, invalid or not supported; the message names the key."""

class SecurityProtocol(enum.IntEnum):
    """Kafka's ``SecurityProtocol`` ids (the SecurityProtocol field of broker registrations)."""

    PLAINTEXT = 0
    SSL = 1
    SASL_PLAINTEXT = 2
    SASL_SSL = 3

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)

    @classmethod
    def parse(cls, key: str, text: str) -> SecurityProtocol:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise SecurityConfigError(f"{key}: unknown security protocol {text.strip()!r} "
                                      f"(want one of {', '.join(p.name for p in cls)})") from None

CLIENT_AUTH = ("none", "requested", "required")      # ssl.client.auth

TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")               # what ssl.enabled.protocols may name

_KEYSTORE_TYPES = ("PEM", "PKCS12")                   # Kafka's default JKS is a Java format

@dataclass(frozen=True, slots=True)
class SslSettings:
    """One side's TLS settings, by Kafka's names (the field is the name after ``ssl.``).

    The keystore is a file (``keystore_location``: a PEM file holding the private key and
    the certificate chain, or a PKCS12 file) or PEM text (``keystore_certificate_chain`` +
    ``keystore_key``); ``keystore_key_location`` is librdkafka's separate key file. The
    truststore likewise (``truststore_location`` or ``truststore_certificates``); none
    means the system's CAs.
    """

    keystore_type: str = "PEM"
    keystore_location: str | None = None
    keystore_key_location: str | None = None
    keystore_password: str | None = None
    key_password: str | None = None
    keystore_certificate_chain: str | None = None
    keystore_key: str | None = None
    truststore_type: str = "PEM"
    truststore_location: str | None = None
    truststore_password: str | None = None
    truststore_certificates: str | None = None
    client_auth: str = "none"
    enabled_protocols: tuple[str, ...] = TLS_VERSIONS
    endpoint_identification_algorithm: str = "https"
    verify_certificates: bool = True       # librdkafka's enable.ssl.certificate.verification

    @property
    def has_keystore(self) -> bool:
        return bool(self.keystore_location or self.keystore_certificate_chain)

@dataclass(frozen=True, slots=True)
class SaslCredentials:
    """What an outbound connection authenticates with (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)."""

    mechanism: str
    username: str
    password: str = field(repr=False)

@dataclass(frozen=True, slots=True)
class Security:
    """What one listener serves or one connection speaks (``sasl``: an outbound connection's
    credentials; a listener's users are in ``NodeSecurity.sasl``)."""

    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    ssl: SslSettings | None = field(default=None)
    sasl: SaslCredentials | None = field(default=None)

    def __post_init__(self):
        assert (self.ssl is not None) == self.protocol.uses_tls, "TLS settings go with SSL protocols only"

PLAINTEXT = Security()

# ssl.* keys a node honours, with the SslSettings field each sets. Kafka's other ssl.*
# keys (ssl.cipher.suites with Java's names, ssl.provider, ssl.keymanager.algorithm,
# ssl.engine.factory.class, ...) are refused, not ignored.
SSL_KEYS = {
    "ssl.keystore.type": "keystore_type",
    "ssl.keystore.location": "keystore_location",
    "ssl.keystore.password": "keystore_password",
    "ssl.key.password": "key_password",
    "ssl.keystore.certificate.chain": "keystore_certificate_chain",
    "ssl.keystore.key": "keystore_key",
    "ssl.truststore.type": "truststore_type",
    "ssl.truststore.location": "truststore_location",
    "ssl.truststore.password": "truststore_password",
    "ssl.truststore.certificates": "truststore_certificates",
    "ssl.client.auth": "client_auth",
    "ssl.enabled.protocols": "enabled_protocols",
    "ssl.endpoint.identification.algorithm": "endpoint_identification_algorithm",
}

# ssl.protocol (SSLContext's protocol, Kafka default TLSv1.3) is accepted when it names
# a version ssl.enabled.protocols allows: Python's contexts negotiate within those.
_ACCEPTED_KEYS = ("ssl.protocol",
                  "ssl.principal.mapping.rules")    # honoured by the listener's principal (net.ssl_principal)

NODE_SSL_KEYS = frozenset(SSL_KEYS) | frozenset(_ACCEPTED_KEYS)

SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")       # what SASL listeners can serve

def listener_prefix(listener: str) -> str:
    """Kafka's per-listener config prefix: ``listener.name.<lower-case name>.``."""
    return f"listener.name.{listener.lower()}."

def ssl_settings(texts: Mapping[str, str | bool], prefix: str, keystore_default: str) -> SslSettings:
    """Validated ``SslSettings`` from field -> text (blank values count as unset, as in Kafka;
    ``verify_certificates`` may be a bool already)."""
    values: dict[str, Any] = {k: v.strip() if k not in ("keystore_key", "keystore_certificate_chain", "truststore_certificates")
              and isinstance(v, str) else v for k, v in texts.items() if not isinstance(v, str) or v.strip()}
    if "verify_certificates" in values:
        values["verify_certificates"] = bool(values["verify_certificates"])
    keystore_type = values.pop("keystore_type", keystore_default).upper()
    truststore_type = values.pop("truststore_type", keystore_default).upper()
    pem_inline = "keystore_certificate_chain" in values or "keystore_key" in values
    if pem_inline or "keystore_key_location" in values:
        keystore_type = "PEM" if keystore_type == keystore_default else keystore_type
    if "truststore_certificates" in values:
        truststore_type = "PEM" if truststore_type == keystore_default else truststore_type
    for key, kind, used in (("keystore", keystore_type, values.get("keystore_location") or pem_inline),
                            ("truststore", truststore_type, values.get("truststore_location")
                             or "truststore_certificates" in values)):
        if used and kind not in _KEYSTORE_TYPES:
            raise SecurityConfigError(f"{prefix}{key}.type={kind} is not supported (Java's format): "
                                      f"use {' or '.join(_KEYSTORE_TYPES)}")
    if pem_inline and not ("keystore_certificate_chain" in values and "keystore_key" in values):
        raise SecurityConfigError(f"{prefix}keystore.certificate.chain and {prefix}keystore.key go together")
    if pem_inline and "keystore_location" in values:
        raise SecurityConfigError(f"{prefix}keystore.location and {prefix}keystore.certificate.chain "
                                  "are exclusive")
    if "keystore_key_location" in values and "keystore_location" not in values:
        raise SecurityConfigError("ssl.key.location needs ssl.certificate.location")
    client_auth = values.pop("client_auth", "none").lower()
    if client_auth not in CLIENT_AUTH:
        raise SecurityConfigError(f"{prefix}client.auth: want one of {', '.join(CLIENT_AUTH)}, got {client_auth!r}")
    protocols = tuple(p.strip() for p in values.pop("enabled_protocols", ",".join(TLS_VERSIONS)).split(",")
                      if p.strip())
    bad = [p for p in protocols if p not in TLS_VERSIONS]
    if bad or not protocols:
        raise SecurityConfigError(f"{prefix}enabled.protocols: {bad[0] if bad else 'empty'} is not supported "
                                  f"(want {' and/or '.join(TLS_VERSIONS)})")
    algorithm = values.pop("endpoint_identification_algorithm", "https").lower()
    if algorithm not in ("https", ""):
        raise SecurityConfigError(f"{prefix}endpoint.identification.algorithm: want https or empty, "
                                  f"got {algorithm!r}")
    known = {f.name for f in fields(SslSettings)}
    assert set(values) <= known, set(values) - known
    return SslSettings(keystore_type=keystore_type, truststore_type=truststore_type, client_auth=client_auth,
                       enabled_protocols=protocols, endpoint_identification_algorithm=algorithm, **values)

def check_ssl_protocol(text: str | None, settings: SslSettings) -> None:
    if text is None or not text.strip():
        return
    version = text.strip()
    if version != "TLS" and version not in settings.enabled_protocols:
        raise SecurityConfigError(f"ssl.protocol={version}: want TLS or one of ssl.enabled.protocols "
                                  f"({', '.join(settings.enabled_protocols)})")

def parse_boolean(key: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise SecurityConfigError(f"{key}: want true or false, got {text!r}")
    return lowered == "true"
