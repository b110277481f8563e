"""Security specs without IO: which protocol a listener or a connection speaks and
the TLS settings it uses, read from Kafka's config names.

A node's listeners (``listeners``, ``listener.security.protocol.map``) each get a
``Security``: the protocol (Kafka's ``SecurityProtocol`` ids, which the broker
registration carries) and, for SSL / SASL_SSL, its ``SslSettings``. The SSL
settings of listener ``L`` are the node's ``ssl.*`` settings, overridden by
``listener.name.<l>.ssl.*`` (lower-case listener name, as in Kafka's
``ListenerName.configPrefix``).

Outbound connections take a ``Security`` too: a node's connections to the
controllers use its first ``controller.listener.names`` listener's, to other
brokers ``inter.broker.listener.name``'s (the same settings in client mode, as
Kafka's inter-broker clients use the listener's keystore and truststore).
Clients (the CLI, tierlog's client, the Spark source) build theirs from client
properties (``client_security``) in Kafka's Java form (``ssl.truststore.*``,
``ssl.keystore.*``) or librdkafka's (``ssl.ca.location``,
``ssl.certificate.location``, ``ssl.key.location``).

SASL listeners (SASL_PLAINTEXT, SASL_SSL) serve the PLAIN mechanism
(``sasl.enabled.mechanisms``, per listener ``listener.name.<l>.sasl.enabled.mechanisms``;
its users in ``listener.name.<l>.plain.sasl.jaas.config``, read by ``net.sasl_plain``).
A node connecting to a SASL inter-broker or controller listener logs in with that
JAAS entry's ``username`` / ``password`` and ``sasl.mechanism.inter.broker.protocol`` /
``sasl.mechanism.controller.protocol`` (Kafka's default GSSAPI is refused: set PLAIN);
clients' credentials are ``SaslCredentials`` from ``client_security``.

Nothing here is silently ignored: an ``ssl.*`` / ``sasl.*`` setting tierlog cannot
honour, a value outside what Kafka allows, or SSL / SASL without what it needs raises
``SecurityConfigError`` (a ``ValueError``) with a one-line message naming the key.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

__all__ = [
    "CLIENT_AUTH",
    "NODE_SSL_KEYS",
    "PLAINTEXT",
    "PLAIN_LOGIN_MODULE",
    "NodeSecurity",
    "SaslCredentials",
    "Security",
    "SecurityConfigError",
    "SecurityProtocol",
    "SslSettings",
    "client_security",
    "listener_prefix",
    "node_security",
    "node_ssl_settings",
    "parse_plain_jaas",
    "parse_protocol_map",
    "to_librdkafka",
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
_TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")               # what ssl.enabled.protocols may name
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
    enabled_protocols: tuple[str, ...] = _TLS_VERSIONS
    endpoint_identification_algorithm: str = "https"
    verify_certificates: bool = True       # librdkafka's enable.ssl.certificate.verification

    @property
    def has_keystore(self) -> bool:
        return bool(self.keystore_location or self.keystore_certificate_chain)


@dataclass(frozen=True, slots=True)
class SaslCredentials:
    """What an outbound connection authenticates with (PLAIN)."""

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



# ssl.* keys a node honours, with the SslSettings field each sets. Kafka's other ssl.*
# keys (ssl.cipher.suites with Java's names, ssl.provider, ssl.keymanager.algorithm,
# ssl.engine.factory.class, ssl.principal.mapping.rules, ...) are refused, not ignored.
_NODE_KEYS = {
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
_ACCEPTED_KEYS = ("ssl.protocol",)
NODE_SSL_KEYS = frozenset(_NODE_KEYS) | frozenset(_ACCEPTED_KEYS)
# librdkafka's names for the same things (clients only)
_LIBRDKAFKA_KEYS = {
    "ssl.ca.location": "truststore_location",
    "ssl.ca.pem": "truststore_certificates",
    "ssl.certificate.location": "keystore_location",
    "ssl.certificate.pem": "keystore_certificate_chain",
    "ssl.key.location": "keystore_key_location",
    "ssl.key.pem": "keystore_key",
}


def listener_prefix(listener: str) -> str:
    """Kafka's per-listener config prefix: ``listener.name.<lower-case name>.``."""
    return f"listener.name.{listener.lower()}."


def parse_protocol_map(text: str | None, controller_names: list[str]) -> dict[str, SecurityProtocol]:
    """``listener.security.protocol.map`` (``NAME:PROTOCOL,...``), listener names upper-cased.

    Unset, it is Kafka's default (each protocol's name maps to itself) plus PLAINTEXT for
    the controller listeners, as Kafka's KRaft mode adds (KafkaConfig's
    effectiveListenerSecurityProtocolMap).
    """
    if text is None:
        out = {p.name: p for p in SecurityProtocol}
        for name in controller_names:
            out.setdefault(name.upper(), SecurityProtocol.PLAINTEXT)
        return out
    out = {}
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        name, colon, protocol = entry.partition(":")
        if not colon or not name.strip():
            raise SecurityConfigError(f"listener.security.protocol.map: bad entry {entry!r} "
                                      "(want LISTENER_NAME:SECURITY_PROTOCOL)")
        if name.strip().upper() in out:
            raise SecurityConfigError(f"listener.security.protocol.map: listener {name.strip()} mapped twice")
        out[name.strip().upper()] = SecurityProtocol.parse("listener.security.protocol.map", protocol)
    return out


def node_ssl_settings(props: Mapping[str, str], listener: str, serving: bool = True) -> SslSettings:
    """The SSL settings of ``listener``: ``ssl.*`` overridden by ``listener.name.<l>.ssl.*``.
    A listener this node serves needs a keystore; one it only connects to (a broker's
    controller listener) needs one only for mutual TLS."""
    prefix = listener_prefix(listener)
    merged = {k: v for k, v in props.items() if k.startswith("ssl.")}
    merged.update({k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix + "ssl.")})
    unknown = sorted(k for k in merged if k not in NODE_SSL_KEYS)
    if unknown:
        raise SecurityConfigError(f"{unknown[0]}: not supported by tierlog (listener {listener}); "
                                  f"supported ssl settings: {', '.join(sorted(NODE_SSL_KEYS))}")
    values = {_NODE_KEYS[k]: v for k, v in merged.items() if k in _NODE_KEYS}
    settings = _settings(values, "ssl.", keystore_default="JKS")
    _check_ssl_protocol(merged.get("ssl.protocol"), settings)
    if serving and not settings.has_keystore:
        raise SecurityConfigError(f"listener {listener} is SSL but has no keystore: set ssl.keystore.location "
                                  "(PEM or PKCS12) or ssl.keystore.certificate.chain + ssl.keystore.key")
    if settings.client_auth != "none" and not (settings.truststore_location or settings.truststore_certificates):
        raise SecurityConfigError(f"ssl.client.auth={settings.client_auth} on listener {listener} needs a "
                                  "truststore to verify client certificates: set ssl.truststore.location")
    return settings


def client_security(props: Mapping[str, str]) -> Security:
    """A client's security from its properties (``security.protocol``, ``ssl.*`` and ``sasl.*``,
    Kafka's Java names or librdkafka's). Settings of a protocol not asked for are refused, so a
    forgotten ``security.protocol=SSL`` never means a silent plaintext connection."""
    protocol = SecurityProtocol.parse("security.protocol", props.get("security.protocol", "PLAINTEXT"))
    sasl = _client_sasl(props, protocol)
    ssl_props = {k: v for k, v in props.items() if k.startswith("ssl.") or k == "enable.ssl.certificate.verification"}
    if not protocol.uses_tls:
        if ssl_props:
            raise SecurityConfigError(f"{min(ssl_props)} is set but security.protocol is {protocol.name}: "
                                      "set security.protocol=SSL (or SASL_SSL)")
        return Security(protocol, sasl=sasl)
    values = {}
    for key, text in ssl_props.items():
        name = _NODE_KEYS.get(key) or _LIBRDKAFKA_KEYS.get(key)
        if key == "enable.ssl.certificate.verification":
            values["verify_certificates"] = _boolean(key, text)
        elif key == "ssl.protocol":
            continue
        elif name is None or name == "client_auth":
            raise SecurityConfigError(f"{key}: not a client ssl setting tierlog supports")
        else:
            values[name] = text
    settings = _settings(values, "ssl.", keystore_default="PEM")
    _check_ssl_protocol(ssl_props.get("ssl.protocol"), settings)
    return Security(protocol, settings, sasl)


_CLIENT_SASL_KEYS = ("sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password", "sasl.jaas.config")


def _client_sasl(props: Mapping[str, str], protocol: SecurityProtocol) -> SaslCredentials | None:
    """PLAIN credentials from ``sasl.mechanism`` (librdkafka: ``sasl.mechanisms``) and
    ``sasl.jaas.config`` (Java) or ``sasl.username`` / ``sasl.password`` (librdkafka)."""
    keys = sorted(k for k in props if k.startswith("sasl."))
    if not protocol.uses_sasl:
        if keys:
            raise SecurityConfigError(f"{keys[0]} is set but security.protocol is {protocol.name}: "
                                      "set security.protocol=SASL_PLAINTEXT or SASL_SSL")
        return None
    unknown = [k for k in keys if k not in _CLIENT_SASL_KEYS]
    if unknown:
        raise SecurityConfigError(f"{unknown[0]}: not a client sasl setting tierlog supports")
    mechanism = (props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "GSSAPI").strip().upper()
    if mechanism not in SASL_MECHANISMS:
        raise SecurityConfigError(f"sasl.mechanism={mechanism} is not supported (tierlog: "
                                  f"{', '.join(SASL_MECHANISMS)})")
    options = parse_plain_jaas("sasl.jaas.config", props["sasl.jaas.config"]) if "sasl.jaas.config" in props \
        else {"username": props.get("sasl.username", ""), "password": props.get("sasl.password")}
    if not options.get("username") or options.get("password") is None:
        raise SecurityConfigError("SASL PLAIN needs a user: set sasl.username and sasl.password "
                                  "(or sasl.jaas.config with username and password)")
    return SaslCredentials(mechanism, options["username"], options["password"])


def _settings(values: dict[str, str], prefix: str, keystore_default: str) -> SslSettings:
    """Validated ``SslSettings`` from field -> text (blank values count as unset, as in Kafka)."""
    values = {k: v.strip() if k not in ("keystore_key", "keystore_certificate_chain", "truststore_certificates")
              else v for k, v in values.items() if not isinstance(v, str) or v.strip()}
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
    protocols = tuple(p.strip() for p in values.pop("enabled_protocols", ",".join(_TLS_VERSIONS)).split(",")
                      if p.strip())
    bad = [p for p in protocols if p not in _TLS_VERSIONS]
    if bad or not protocols:
        raise SecurityConfigError(f"{prefix}enabled.protocols: {bad[0] if bad else 'empty'} is not supported "
                                  f"(want {' and/or '.join(_TLS_VERSIONS)})")
    algorithm = values.pop("endpoint_identification_algorithm", "https").lower()
    if algorithm not in ("https", ""):
        raise SecurityConfigError(f"{prefix}endpoint.identification.algorithm: want https or empty, "
                                  f"got {algorithm!r}")
    known = {f.name for f in fields(SslSettings)}
    assert set(values) <= known, set(values) - known
    return SslSettings(keystore_type=keystore_type, truststore_type=truststore_type, client_auth=client_auth,
                       enabled_protocols=protocols, endpoint_identification_algorithm=algorithm, **values)


def _check_ssl_protocol(text: str | None, settings: SslSettings) -> None:
    if text is None or not text.strip():
        return
    version = text.strip()
    if version != "TLS" and version not in settings.enabled_protocols:
        raise SecurityConfigError(f"ssl.protocol={version}: want TLS or one of ssl.enabled.protocols "
                                  f"({', '.join(settings.enabled_protocols)})")


def _boolean(key: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise SecurityConfigError(f"{key}: want true or false, got {text!r}")
    return lowered == "true"


@dataclass(frozen=True, slots=True)
class NodeSecurity:
    """A node's transport security: each of its listeners', and what its outbound
    connections to the controllers and to other brokers speak."""

    listeners: Mapping[str, Security]
    controller: Security
    inter_broker: Security
    sasl: Mapping[str, Mapping[str, str]] = field(default_factory=dict)   # listener -> mechanism -> JAAS


def node_security(props: Mapping[str, str], listeners: list[str], controller_names: list[str],
                  inter_broker_listener: str | None) -> NodeSecurity:
    """Every listener's ``Security`` from Kafka's configs; refuses what tierlog cannot honour."""
    protocols = parse_protocol_map(props.get("listener.security.protocol.map"), controller_names)
    _check_keys(props, [*listeners, *controller_names, *protocols])
    wanted = dict.fromkeys([*listeners, *controller_names[:1], *([inter_broker_listener] if inter_broker_listener
                                                                 else [])])
    out = {name: _listener_security(props, name, protocols, name in listeners) for name in wanted}
    controller = _outbound(props, out[controller_names[0]], controller_names[0],
                           "sasl.mechanism.controller.protocol") if controller_names else PLAINTEXT
    inter_broker = _outbound(props, out[inter_broker_listener], inter_broker_listener,
                             "sasl.mechanism.inter.broker.protocol") if inter_broker_listener else PLAINTEXT
    return NodeSecurity({name: out[name] for name in listeners}, controller, inter_broker,
                        {name: _sasl_mechanisms(props, name) for name in listeners if out[name].protocol.uses_sasl})


SASL_MECHANISMS = ("PLAIN",)       # what SASL listeners can serve


def _outbound(props: Mapping[str, str], security: Security, listener: str, mechanism_key: str) -> Security:
    """A node's connections to ``listener``: its security plus, for SASL, the node's own
    credentials (``username`` / ``password`` of the listener's JAAS configuration of the
    mechanism ``mechanism_key`` names, as Kafka's brokers log in)."""
    if not security.protocol.uses_sasl:
        return security
    mechanism = props.get(mechanism_key, "GSSAPI").strip().upper()      # Kafka's default
    if mechanism not in SASL_MECHANISMS:
        raise SecurityConfigError(f"{mechanism_key}={mechanism} is not supported for listener {listener} "
                                  f"(tierlog: {', '.join(SASL_MECHANISMS)})")
    jaas_key = f"{listener_prefix(listener)}{mechanism.lower()}.sasl.jaas.config"
    options = parse_plain_jaas(jaas_key, props.get(jaas_key, ""))
    if not options.get("username") or "password" not in options:
        raise SecurityConfigError(f"{jaas_key}: the node's own username=\"...\" password=\"...\" are needed "
                                  f"to connect to listener {listener}")
    return replace(security, sasl=SaslCredentials(mechanism, options["username"], options["password"]))


def _sasl_mechanisms(props: Mapping[str, str], listener: str) -> dict[str, str]:
    """``sasl.enabled.mechanisms`` of a SASL listener, each with its JAAS configuration."""
    prefix = listener_prefix(listener)
    key = prefix + "sasl.enabled.mechanisms" if prefix + "sasl.enabled.mechanisms" in props \
        else "sasl.enabled.mechanisms"
    names = [m.strip().upper() for m in props.get(key, "GSSAPI").split(",") if m.strip()]   # Kafka's default
    unsupported = [m for m in names if m not in SASL_MECHANISMS]
    if unsupported or not names:
        raise SecurityConfigError(f"{key}: {unsupported[0] if unsupported else 'empty'} is not supported on "
                                  f"listener {listener} (tierlog serves {', '.join(SASL_MECHANISMS)}; "
                                  "Kafka's default is GSSAPI)")
    out = {}
    for name in names:
        jaas_key = f"{prefix}{name.lower()}.sasl.jaas.config"
        if not props.get(jaas_key, "").strip():
            raise SecurityConfigError(f"listener {listener} enables SASL {name} but has no users: set {jaas_key}")
        out[name] = props[jaas_key]
    return out


def _listener_security(props: Mapping[str, str], name: str, protocols: dict[str, SecurityProtocol],
                       serving: bool) -> Security:
    protocol = protocols.get(name)
    if protocol is None:
        raise SecurityConfigError(f"listener.security.protocol.map: no security protocol for listener {name}")
    return Security(protocol, node_ssl_settings(props, name, serving) if protocol.uses_tls else None)


_JAAS_KEYS = tuple(f"{m.lower()}.sasl.jaas.config" for m in SASL_MECHANISMS)
_NODE_SASL_KEYS = ("sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol",
                   "sasl.mechanism.controller.protocol")


def _check_keys(props: Mapping[str, str], names: list[str]) -> None:
    """Every security key is one tierlog honours: the ``ssl.*`` and ``sasl.*`` keys it knows,
    per-listener overrides of them for a listener the config names; others (Kerberos,
    OAUTHBEARER, ``security.*``, Java plug-in classes) are refused."""
    known = {listener_prefix(n) for n in names}     # listeners, controller listeners, the protocol map's
    for key in sorted(props):
        if key.startswith("listener.name."):
            prefix = next((p for p in known if key.startswith(p)), None)
            if prefix is None:
                raise SecurityConfigError(f"{key}: no listener of that name in listeners, "
                                          "controller.listener.names or listener.security.protocol.map")
            setting = key[len(prefix):]
        elif key.startswith(("ssl.", "sasl.", "security.")):
            setting = key
        else:
            continue
        honoured = setting in NODE_SSL_KEYS or setting in _NODE_SASL_KEYS or \
            (key.startswith("listener.name.") and setting in _JAAS_KEYS)
        if not honoured:
            raise SecurityConfigError(f"{key}: not supported by tierlog; supported security settings: "
                                      f"listener.security.protocol.map, inter.broker.listener.name, "
                                      f"{', '.join(sorted(NODE_SSL_KEYS))} (also as listener.name.<l>.ssl.*), "
                                      "sasl.enabled.mechanisms, sasl.mechanism.inter.broker.protocol, "
                                      "sasl.mechanism.controller.protocol and listener.name.<l>.plain.sasl.jaas.config")


# Kafka's (Java) client ssl.* names that librdkafka spells differently; a PEM keystore file
# holds the key and the chain, which librdkafka reads as certificate and key from one file.
_JAVA_TO_LIBRDKAFKA_PEM = {"ssl.truststore.location": ("ssl.ca.location",),
                           "ssl.truststore.certificates": ("ssl.ca.pem",),
                           "ssl.keystore.certificate.chain": ("ssl.certificate.pem",),
                           "ssl.keystore.key": ("ssl.key.pem",),
                           "ssl.keystore.location": ("ssl.certificate.location", "ssl.key.location")}
_DROPPED_FOR_LIBRDKAFKA = ("ssl.keystore.type", "ssl.truststore.type", "ssl.protocol", "ssl.enabled.protocols")


def to_librdkafka(props: Mapping[str, str]) -> dict[str, str]:
    """Client properties in Kafka's Java form, as librdkafka (confluent-kafka) settings.

    librdkafka names pass through; Java-only ones are translated after ``client_security``
    has checked them all (a PKCS12 keystore is librdkafka's ``ssl.keystore.location``).
    What librdkafka cannot take (a PKCS12 truststore, ssl.enabled.protocols) raises
    ``SecurityConfigError`` rather than being dropped."""
    security = client_security(props)
    out = {k: v for k, v in props.items() if k not in _JAVA_TO_LIBRDKAFKA_PEM and k not in _DROPPED_FOR_LIBRDKAFKA
               and k not in ("ssl.truststore.password", "sasl.jaas.config")}
    if security.sasl is not None and "sasl.jaas.config" in props:
        out |= {"sasl.username": security.sasl.username, "sasl.password": security.sasl.password}
    settings = security.ssl
    if settings is None:
        return out
    if settings.enabled_protocols != _TLS_VERSIONS:
        raise SecurityConfigError("ssl.enabled.protocols: librdkafka (the CLI's and the sink's client) has no "
                                  "such setting; leave it at TLSv1.2,TLSv1.3")
    if settings.truststore_type == "PKCS12" and settings.truststore_location:
        raise SecurityConfigError("ssl.truststore.type=PKCS12 is not supported by librdkafka: use a PEM truststore")
    for key, targets in _JAVA_TO_LIBRDKAFKA_PEM.items():
        if key in props and props[key].strip():
            if key == "ssl.keystore.location" and settings.keystore_type == "PKCS12":
                targets = ("ssl.keystore.location",)
            out.update(dict.fromkeys(targets, props[key]))
    if "ssl.endpoint.identification.algorithm" in props:
        out["ssl.endpoint.identification.algorithm"] = settings.endpoint_identification_algorithm or "none"
    return out
