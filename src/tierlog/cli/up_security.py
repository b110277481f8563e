"""``tierlog up --security ssl|sasl_plaintext|sasl_ssl``: what a secured local cluster needs.

- **TLS** (ssl, sasl_ssl): a development CA and one node certificate (SAN: the --listen
  host, localhost, 127.0.0.1) made with ``cryptography`` under ``<data-dir>/tls/``
  (``ca.crt``, ``node.pem``: key + chain, Kafka's PEM keystore form), kept across runs.
  Every listener, the controller listener included, serves TLS; nodes verify each other
  against the CA.
- **SASL** (sasl_plaintext, sasl_ssl): clients and brokers use SCRAM-SHA-512 (SCRAM-SHA-256
  is enabled too) on the broker listener; the brokers' own user is ``admin``, whose
  credentials are bootstrap records of the new cluster (``tierlog format --add-scram``, as
  Kafka's ``kafka-storage.sh format --add-scram``: the credentials must exist before the
  brokers can log in). The controller listener uses PLAIN with the same user and
  password, from its JAAS entry: SCRAM cannot authenticate controllers, whose credentials
  would live in the metadata log they replicate (Kafka's KIP-900 makes the same choice).
  ``admin``'s password is random (``secrets``), kept in ``<data-dir>/client.properties``
  and in each node's server.properties (the JAAS entries, as in Kafka).
- **Authorization** (sasl_plaintext, sasl_ssl): the StandardAuthorizer is on (KIP-801,
  ``authorizer.class.name``; ``allow.everyone.if.no.acl.found`` stays false), ``admin`` is
  the super user (``super.users=User:admin``) and also the principal every node logs in as
  (to the controller listener with PLAIN, to the brokers with SCRAM), so the nodes may do
  what nodes need (CLUSTER_ACTION on the cluster: registrations, heartbeats, AlterPartition,
  replica fetches, transaction markers) and every other user needs ACLs
  (``tierlog acls --add``). With ``ssl`` alone every client is ``User:ANONYMOUS`` (no client
  certificates), so no authorizer is turned on: TLS there is encryption, not identity.
- **client.properties** (``<data-dir>/client.properties``, mode 0600): Kafka's client
  properties form (security.protocol, sasl.mechanism, sasl.jaas.config,
  ssl.truststore.*), usable by every ``tierlog`` command through ``--command-config``
  and by Kafka's own tools; beside it **client-librdkafka.properties** (mode 0600), the
  same settings in librdkafka's names (security.protocol, ssl.ca.location, sasl.mechanisms,
  sasl.username, sasl.password) for confluent-kafka, kcat and the other librdkafka clients
  (tierlog commands take either file).

The listener names are the protocols' (``SASL_SSL://HOST:PORT``), so Kafka's default
``listener.security.protocol.map`` entries apply; CONTROLLER is mapped to the same protocol.
"""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from tierlog.config import ConfigError, parse_properties
from tierlog.metadata.authorizer import AUTHORIZER_CLASS_NAME, STANDARD_AUTHORIZER
from tierlog.metadata.scram import ScramMechanism

from .errors import CliError
from .scram_config import ScramEntry

__all__ = ["ADMIN_USER", "SECURITY_MODES", "UpSecurity", "prepare_security"]

SECURITY_MODES = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
ADMIN_USER = "admin"
CLIENT_PROPERTIES = "client.properties"
LIBRDKAFKA_PROPERTIES = "client-librdkafka.properties"
_SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
_PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@dataclass(frozen=True)
class UpSecurity:
    """The broker listener's name, every node's security settings, the bootstrap SCRAM
    credentials (controllers) and where client.properties and its librdkafka twin are (None:
    plaintext)."""

    broker_listener: str = "PLAINTEXT"
    node_props: dict[str, str] = field(default_factory=dict)
    scram: list[ScramEntry] = field(default_factory=list)
    client_properties: Path | None = None
    librdkafka_properties: Path | None = None


def prepare_security(mode: str, data_dir: Path, host: str, existing_cluster: bool) -> UpSecurity:
    """Certificates, passwords and client.properties for ``mode``, reusing what an earlier run
    of the same data dir made (CliError: an existing plaintext cluster cannot gain SASL users)."""
    if mode == "plaintext":
        return UpSecurity()
    protocol = mode.upper()
    props = {"listener.security.protocol.map": f"{protocol}:{protocol},CONTROLLER:{protocol}",
             "inter.broker.listener.name": protocol}
    client = {"security.protocol": protocol}
    librdkafka = {"security.protocol": protocol}
    if "ssl" in mode:
        ca = _certificates(data_dir / "tls", host)
        props |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(data_dir / "tls" / "node.pem"),
                  "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca)}
        client |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca)}
        librdkafka |= {"ssl.ca.location": str(ca)}
    scram: list[ScramEntry] = []
    if "sasl" in mode:
        password = _admin_password(data_dir / CLIENT_PROPERTIES, existing_cluster)
        props |= _sasl_props(protocol, password)
        client |= {"sasl.mechanism": "SCRAM-SHA-512",
                   "sasl.jaas.config": _jaas(_SCRAM_LOGIN, username=ADMIN_USER, password=password)}
        librdkafka |= {"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": ADMIN_USER, "sasl.password": password}
        scram = [ScramEntry(m, ADMIN_USER, password, 4096) for m in ScramMechanism]
    path = _write_client_properties(data_dir / CLIENT_PROPERTIES, client, "Kafka's Java client form")
    twin = _write_client_properties(data_dir / LIBRDKAFKA_PROPERTIES, librdkafka,
                                    "librdkafka's names (confluent-kafka, kcat)")
    return UpSecurity(protocol, props, scram, path, twin)


def _sasl_props(protocol: str, password: str) -> dict[str, str]:
    listener = protocol.lower()
    return {
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        f"listener.name.{listener}.scram-sha-512.sasl.jaas.config":
            _jaas(_SCRAM_LOGIN, username=ADMIN_USER, password=password),
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config":
            _jaas(_PLAIN_LOGIN, username=ADMIN_USER, password=password, **{f"user_{ADMIN_USER}": password}),
        "super.users": f"User:{ADMIN_USER}",
        AUTHORIZER_CLASS_NAME: STANDARD_AUTHORIZER,
    }


def _jaas(module: str, **options: str) -> str:
    body = " ".join(f'{k}="{v}"' for k, v in options.items())
    return f"{module} required {body};"


def _certificates(tls_dir: Path, host: str) -> Path:
    """``tls_dir``'s CA certificate, making the CA and the node certificate on the first run."""
    from tierlog.net.dev_certs import (
        DevCa,  # cryptography: loaded only when TLS is asked for
    )
    if not (tls_dir / "ca.crt").exists() or not (tls_dir / "node.pem").exists():
        DevCa.create(tls_dir).issue("node", list(dict.fromkeys([host, "localhost", "127.0.0.1"])))
    return tls_dir / "ca.crt"


def _admin_password(path: Path, existing_cluster: bool) -> str:
    """The password an earlier run wrote, else a new one (only for a new cluster)."""
    if path.exists():
        try:
            jaas = parse_properties(path.read_text()).get("sasl.jaas.config", "")
        except ConfigError as e:
            raise CliError(f"{path}: {e}") from None
        marker = 'password="'
        if marker in jaas:
            return jaas.split(marker, 1)[1].split('"', 1)[0]
    if existing_cluster:
        raise CliError(f"the cluster in {path.parent} was started without SASL, so its SCRAM user {ADMIN_USER!r} "
                       "cannot be bootstrapped now: use a new --data-dir (or add users with `tierlog users`)")
    return secrets.token_urlsafe(24)


def _write_client_properties(path: Path, settings: dict[str, str], form: str) -> Path:
    from tierlog.config import format_properties
    text = format_properties(settings, f"Written by `tierlog up --security` in {form}; use with "
                                       f"--command-config {path} (tierlog) or see docs/security.md")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path
