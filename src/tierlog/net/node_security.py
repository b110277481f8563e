"""A node's transport security from Kafka's configs, without IO.

Each listener (``listeners``, ``listener.security.protocol.map``) gets a ``Security``;
the SSL settings of listener ``L`` are the node's ``ssl.*`` settings, overridden by
``listener.name.<l>.ssl.*`` (lower-case listener name, as in Kafka's
``ListenerName.configPrefix``). A node's connections to the controllers use its first
``controller.listener.names`` listener's security, to other brokers
``inter.broker.listener.name``'s (the same settings in client mode, as Kafka's
inter-broker clients use the listener's keystore and truststore).

SASL listeners (SASL_PLAINTEXT, SASL_SSL) serve PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
(``sasl.enabled.mechanisms``, per listener ``listener.name.<l>.sasl.enabled.mechanisms``).
PLAIN's users are in ``listener.name.<l>.plain.sasl.jaas.config`` (``net.sasl_plain``);
SCRAM's are the credentials in the metadata log (UserScramCredentialRecords, the image's
``scram``). A node connecting to a SASL inter-broker or controller listener logs in with
``sasl.mechanism.inter.broker.protocol`` / ``sasl.mechanism.controller.protocol`` (Kafka's
default GSSAPI is refused) and the ``username`` / ``password`` of that listener's JAAS entry
for the mechanism (``listener.name.<l>.<mechanism>.sasl.jaas.config``, PlainLoginModule or
ScramLoginModule, as in Kafka). SCRAM is refused on controller listeners: controllers
authenticate each other before the metadata log that holds the credentials can be read
(Kafka's KIP-900 leaves SCRAM off the controller listener too); use PLAIN there.

A SASL listener's sessions last ``connections.max.reauth.ms`` (KIP-368; 0, Kafka's default:
for ever), per mechanism as Kafka's SaslChannelBuilder reads it:
``listener.name.<l>.<mechanism>.connections.max.reauth.ms``, else
``listener.name.<l>.connections.max.reauth.ms``, else ``connections.max.reauth.ms``.

Every ``ssl.*`` / ``sasl.*`` / ``listener.name.*`` key is honoured or refused
(``SecurityConfigError``), never ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from tierlog.net.jaas import parse_jaas
from tierlog.net.security import (
    NODE_SSL_KEYS,
    PLAINTEXT,
    SASL_MECHANISMS,
    SSL_KEYS,
    SaslCredentials,
    Security,
    SecurityConfigError,
    SecurityProtocol,
    SslSettings,
    check_ssl_protocol,
    listener_prefix,
    ssl_settings,
)

__all__ = ["NodeSecurity", "node_security", "node_ssl_settings", "own_principal_warnings", "parse_protocol_map"]


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
    values = {SSL_KEYS[k]: v for k, v in merged.items() if k in SSL_KEYS}
    settings = ssl_settings(values, "ssl.", keystore_default="JKS")
    check_ssl_protocol(merged.get("ssl.protocol"), settings)
    if serving and not settings.has_keystore:
        raise SecurityConfigError(f"listener {listener} is SSL but has no keystore: set ssl.keystore.location "
                                  "(PEM or PKCS12) or ssl.keystore.certificate.chain + ssl.keystore.key")
    if settings.client_auth != "none" and not (settings.truststore_location or settings.truststore_certificates):
        raise SecurityConfigError(f"ssl.client.auth={settings.client_auth} on listener {listener} needs a "
                                  "truststore to verify client certificates: set ssl.truststore.location")
    return settings

@dataclass(frozen=True, slots=True)
class NodeSecurity:
    """A node's transport security: each of its listeners', and what its outbound
    connections to the controllers and to other brokers speak."""

    listeners: Mapping[str, Security]
    controller: Security
    inter_broker: Security
    # listener -> mechanism -> its JAAS configuration (PLAIN's users; None for SCRAM: the metadata log's)
    sasl: Mapping[str, Mapping[str, str | None]] = field(default_factory=dict)
    # listener -> mechanism -> connections.max.reauth.ms (KIP-368; 0: sessions never expire)
    reauth_ms: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

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
    sasl = {name: _sasl_mechanisms(props, name, name in controller_names) for name in listeners
            if out[name].protocol.uses_sasl}
    return NodeSecurity({name: out[name] for name in listeners}, controller, inter_broker, sasl,
                        {name: {m: _reauth_ms(props, name, m) for m in mechanisms} for name, mechanisms in sasl.items()})


REAUTH_MS = "connections.max.reauth.ms"


def _reauth_ms(props: Mapping[str, str], listener: str, mechanism: str) -> int:
    """``connections.max.reauth.ms`` of ``mechanism`` on ``listener`` (KIP-368), the most specific form set."""
    prefix = listener_prefix(listener)
    for key in (f"{prefix}{mechanism.lower()}.{REAUTH_MS}", prefix + REAUTH_MS, REAUTH_MS):
        if key in props:
            try:
                return int(str(props[key]).strip())
            except ValueError:
                raise SecurityConfigError(f"{key}={props[key]!r}: want a whole number of milliseconds") from None
    return 0

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
    if mechanism != "PLAIN" and mechanism_key == "sasl.mechanism.controller.protocol":
        raise SecurityConfigError(_SCRAM_ON_CONTROLLER.format(key=f"{mechanism_key}={mechanism}"))
    jaas_key = f"{listener_prefix(listener)}{mechanism.lower()}.sasl.jaas.config"
    options = parse_jaas(jaas_key, props.get(jaas_key, ""), mechanism)
    if not options.get("username") or "password" not in options:
        raise SecurityConfigError(f"{jaas_key}: the node's own username=\"...\" password=\"...\" are needed "
                                  f"to connect to listener {listener}")
    return replace(security, sasl=SaslCredentials(mechanism, options["username"], options["password"]))

_SCRAM_ON_CONTROLLER = ("{key}: SCRAM cannot authenticate controllers (their credentials live in the "
                        "metadata log the controllers replicate); use PLAIN on the controller listener")


def _sasl_mechanisms(props: Mapping[str, str], listener: str, controller: bool) -> dict[str, str | None]:
    """``sasl.enabled.mechanisms`` of a SASL listener, each with its JAAS configuration
    (PLAIN's users; SCRAM needs none on the serving side)."""
    prefix = listener_prefix(listener)
    key = prefix + "sasl.enabled.mechanisms" if prefix + "sasl.enabled.mechanisms" in props \
        else "sasl.enabled.mechanisms"
    names = [m.strip().upper() for m in props.get(key, "GSSAPI").split(",") if m.strip()]   # Kafka's default
    unsupported = [m for m in names if m not in SASL_MECHANISMS]
    if unsupported or not names:
        raise SecurityConfigError(f"{key}: {unsupported[0] if unsupported else 'empty'} is not supported on "
                                  f"listener {listener} (tierlog serves {', '.join(SASL_MECHANISMS)}; "
                                  "Kafka's default is GSSAPI)")
    out: dict[str, str | None] = {}
    for name in names:
        if name != "PLAIN":
            if controller:
                raise SecurityConfigError(_SCRAM_ON_CONTROLLER.format(key=f"{key}={name} (listener {listener})"))
            out[name] = None
            continue
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

_LISTENER_SASL_KEYS = (*(f"{m.lower()}.sasl.jaas.config" for m in SASL_MECHANISMS),
              *(f"{m.lower()}.connections.max.reauth.ms" for m in SASL_MECHANISMS), "connections.max.reauth.ms")

_CREATION_RATE = "max.connection.creation.rate"      # KIP-612, per listener (net.connection_rates)
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
            (key.startswith("listener.name.") and setting in (*_LISTENER_SASL_KEYS, _CREATION_RATE))
        if not honoured:
            raise SecurityConfigError(f"{key}: not supported by tierlog; supported security settings: "
                                      f"listener.security.protocol.map, inter.broker.listener.name, "
                                      f"{', '.join(sorted(NODE_SSL_KEYS))} (also as listener.name.<l>.ssl.*), "
                                      "sasl.enabled.mechanisms, sasl.mechanism.inter.broker.protocol, "
                                      "sasl.mechanism.controller.protocol, listener.name.<l>.<mechanism>.sasl.jaas.config, "
                                      "listener.name.<l>[.<mechanism>].connections.max.reauth.ms "
                                      f"({', '.join(m.lower() for m in SASL_MECHANISMS)})")


def own_principal_warnings(props: Mapping[str, str], security: NodeSecurity, is_broker: bool) -> list[str]:
    """With ACLs on (``authorizer.class.name``): a line for each listener this node connects to as
    a principal missing from ``super.users`` (its requests there need CLUSTER_ACTION, which only
    ACLs would then give). Known principals only: ``User:<username>`` of SASL, ``User:ANONYMOUS``
    of PLAINTEXT; a TLS certificate's is known only when its peer maps it, so SSL is not checked."""
    if not (props.get("authorizer.class.name") or "").strip():
        return []
    supers = {u.strip() for u in (props.get("super.users") or "").split(";") if u.strip()}
    routes = [("controller.listener.names", security.controller)]
    if is_broker:
        routes.append(("inter.broker.listener.name", security.inter_broker))
    out = []
    for what, spec in routes:
        principal = f"User:{spec.sasl.username}" if spec.sasl is not None else \
            None if spec.protocol.uses_tls else "User:ANONYMOUS"
        if principal is not None and principal not in supers:
            out.append(f"this node connects to its {what} listener as {principal}, which is not in super.users: "
                       "with authorizer.class.name set its requests there are refused unless ACLs allow "
                       "CLUSTER_ACTION on the cluster")
    return out
