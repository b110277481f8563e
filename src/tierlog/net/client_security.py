"""A client's transport security from its properties, without IO: ``security.protocol``,
``ssl.*`` and ``sasl.*`` in Kafka's Java form (``ssl.truststore.*``, ``ssl.keystore.*``,
``sasl.jaas.config``) or librdkafka's (``ssl.ca.location``, ``ssl.certificate.location``,
``ssl.key.location``, ``sasl.username`` / ``sasl.password``), for the CLI, tierlog's client
and the Spark source; ``to_librdkafka`` translates the Java names for confluent-kafka.
Settings of a protocol not asked for are refused, so a forgotten ``security.protocol``
never means a silent plaintext connection.
"""

from __future__ import annotations

from collections.abc import Mapping

from tierlog.net.jaas import parse_jaas
from tierlog.net.security import (
    SASL_MECHANISMS,
    SSL_KEYS,
    TLS_VERSIONS,
    SaslCredentials,
    Security,
    SecurityConfigError,
    SecurityProtocol,
    check_ssl_protocol,
    parse_boolean,
    ssl_settings,
)

__all__ = ["client_security", "to_librdkafka"]


# librdkafka's names for the same things (clients only)
_LIBRDKAFKA_KEYS = {
    "ssl.ca.location": "truststore_location",
    "ssl.ca.pem": "truststore_certificates",
    "ssl.certificate.location": "keystore_location",
    "ssl.certificate.pem": "keystore_certificate_chain",
    "ssl.key.location": "keystore_key_location",
    "ssl.key.pem": "keystore_key",
}

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
    values: dict[str, str | bool] = {}
    for key, text in ssl_props.items():
        name = SSL_KEYS.get(key) or _LIBRDKAFKA_KEYS.get(key)
        if key == "enable.ssl.certificate.verification":
            values["verify_certificates"] = parse_boolean(key, text)
        elif key == "ssl.protocol":
            continue
        elif name is None or name == "client_auth":
            raise SecurityConfigError(f"{key}: not a client ssl setting tierlog supports")
        else:
            values[name] = text
    settings = ssl_settings(values, "ssl.", keystore_default="PEM")
    check_ssl_protocol(ssl_props.get("ssl.protocol"), settings)
    return Security(protocol, settings, sasl)

_CLIENT_SASL_KEYS = ("sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password", "sasl.jaas.config")

def _client_sasl(props: Mapping[str, str], protocol: SecurityProtocol) -> SaslCredentials | None:
    """PLAIN / SCRAM credentials from ``sasl.mechanism`` (librdkafka: ``sasl.mechanisms``) and
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
    options = parse_jaas("sasl.jaas.config", props["sasl.jaas.config"], mechanism) if "sasl.jaas.config" in props \
        else {"username": props.get("sasl.username", ""), "password": props.get("sasl.password")}
    if not options.get("username") or options.get("password") is None:
        raise SecurityConfigError(f"SASL {mechanism} needs a user: set sasl.username and sasl.password "
                                  "(or sasl.jaas.config with username and password)")
    return SaslCredentials(mechanism, options["username"] or "", options["password"] or "")

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
    if settings.enabled_protocols != TLS_VERSIONS:
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
