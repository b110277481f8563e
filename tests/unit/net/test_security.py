"""The transport seam: security specs from Kafka's configs, SSL contexts from them, and
the one outbound connect (blocking and asyncio) against a TLS ``net.server.Server``."""

import asyncio
import socket
import ssl

import pytest

from tierlog.net.blocking import BlockingConnection
from tierlog.net.client import PeerConnection
from tierlog.net.client_security import client_security
from tierlog.net.connection_quotas import ConnectionQuotas
from tierlog.net.dev_certs import DevCa
from tierlog.net.memory_pool import MemoryPool
from tierlog.net.node_security import (
    node_security,
    own_principal_warnings,
    parse_protocol_map,
)
from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.net.security import PLAINTEXT, SecurityConfigError, SecurityProtocol
from tierlog.net.server import Limits, Server, bind
from tierlog.net.ssl_context import client_context, server_context
from tierlog.protocol import ApiKey, decode_request_header, encode_response

ANSWER = {"ErrorCode": 0, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 3}]}


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    ca = DevCa.create(directory)
    other = DevCa.create(directory / "other")
    return {"ca": ca.cert_path, "node": ca.issue("node", ["localhost", "127.0.0.1"], pkcs12_password="p12pass"),
            "client": ca.issue("client", ["client"]), "stranger": other.issue("stranger", ["127.0.0.1"]),
            "other_ca": other.cert_path}


def _node(props: dict, listeners=("PLAINTEXT",), controllers=(), inter="PLAINTEXT"):
    return node_security(props, list(listeners), list(controllers), inter)


# -- specs ------------------------------------------------------------------------------------------

def test_protocol_map_default_maps_protocols_and_controller_listeners():
    default = parse_protocol_map(None, ["CONTROLLER"])
    assert default["SSL"] is SecurityProtocol.SSL and default["CONTROLLER"] is SecurityProtocol.PLAINTEXT
    explicit = parse_protocol_map("internal:SSL, EXTERNAL:plaintext", ["CONTROLLER"])
    assert explicit == {"INTERNAL": SecurityProtocol.SSL, "EXTERNAL": SecurityProtocol.PLAINTEXT}
    for bad in ("INTERNAL", "INTERNAL:TLS", "A:SSL,a:SSL"):
        with pytest.raises(SecurityConfigError, match="listener.security.protocol.map"):
            parse_protocol_map(bad, [])


def test_listener_specs_with_per_listener_overrides(certs):
    props = {"listener.security.protocol.map": "CLIENT:SSL,BROKER:SSL,CONTROLLER:PLAINTEXT",
             "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs["node"].keystore),
             "listener.name.broker.ssl.client.auth": "required",
             "listener.name.broker.ssl.truststore.type": "PEM",
             "listener.name.broker.ssl.truststore.location": str(certs["ca"])}
    spec = _node(props, ("CLIENT", "BROKER"), ("CONTROLLER",), inter="BROKER")
    assert spec.listeners["CLIENT"].ssl.client_auth == "none"
    assert spec.listeners["BROKER"].ssl.client_auth == "required"
    assert spec.inter_broker is spec.listeners["BROKER"] and spec.controller == PLAINTEXT
    assert spec.listeners["BROKER"].protocol is SecurityProtocol.SSL


@pytest.mark.parametrize(("props", "message"), [
    ({"listener.security.protocol.map": "PLAINTEXT:SSL"}, "has no keystore"),
    ({"listener.security.protocol.map": "PLAINTEXT:SSL", "ssl.keystore.location": "/x.jks"},
     "ssl.keystore.type=JKS is not supported"),
    ({"listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT"}, "sasl.mechanism.inter.broker.protocol=GSSAPI"),
    ({"listener.security.protocol.map": "OTHER:SSL"}, "no security protocol for listener PLAINTEXT"),
    ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "ssl.cipher.suites: not supported"),
    ({"ssl.engine.factory.class": "x.Y"}, "ssl.engine.factory.class: not supported"),
    ({"sasl.kerberos.service.name": "kafka"}, "sasl.kerberos.service.name: not supported"),
    ({"listener.name.nope.ssl.keystore.location": "/x"}, "no listener of that name"),
    ({"listener.security.protocol.map": "PLAINTEXT:SSL", "ssl.keystore.type": "PEM",
      "ssl.keystore.location": "k.pem", "ssl.enabled.protocols": "TLSv1.1"}, "TLSv1.1 is not supported"),
    ({"listener.security.protocol.map": "PLAINTEXT:SSL", "ssl.keystore.type": "PEM",
      "ssl.keystore.location": "k.pem", "ssl.client.auth": "required"}, "needs a truststore"),
    ({"listener.security.protocol.map": "PLAINTEXT:SSL", "ssl.keystore.type": "PEM",
      "ssl.keystore.location": "k.pem", "ssl.client.auth": "maybe"}, "ssl.client.auth: want one of"),
])
def test_what_a_node_cannot_honour_is_refused(props, message):
    with pytest.raises(SecurityConfigError, match=message):
        _node(props)


def test_sasl_listeners_serve_plain_with_jaas_users():
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
            'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
    base = {"listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,BROKER:PLAINTEXT"}
    spec = _node({**base, "sasl.enabled.mechanisms": "PLAIN", "listener.name.client.plain.sasl.jaas.config": jaas},
                 ("CLIENT", "BROKER"), inter="BROKER")
    assert spec.sasl == {"CLIENT": {"PLAIN": jaas}}
    assert spec.listeners["CLIENT"].protocol is SecurityProtocol.SASL_PLAINTEXT
    with pytest.raises(SecurityConfigError, match="GSSAPI is not supported"):     # Kafka's default mechanism
        _node({**base, "listener.name.client.plain.sasl.jaas.config": jaas}, ("CLIENT", "BROKER"), inter="BROKER")
    with pytest.raises(SecurityConfigError, match="SCRAM-SHA-1 is not supported"):
        _node({**base, "listener.name.client.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-1"},
              ("CLIENT", "BROKER"), inter="BROKER")
    with pytest.raises(SecurityConfigError, match="has no users: set listener.name.client.plain.sasl.jaas.config"):
        _node({**base, "sasl.enabled.mechanisms": "PLAIN"}, ("CLIENT", "BROKER"), inter="BROKER")


def test_connections_max_reauth_ms_per_listener_and_mechanism():
    base = {"listener.security.protocol.map": "A:SASL_PLAINTEXT,B:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512"}
    assert _node(base, ("A", "B"), inter=None).reauth_ms == {
        "A": {"SCRAM-SHA-256": 0, "SCRAM-SHA-512": 0}, "B": {"SCRAM-SHA-256": 0, "SCRAM-SHA-512": 0}}
    spec = _node({**base, "connections.max.reauth.ms": "60000", "listener.name.a.connections.max.reauth.ms": "5000",
                  "listener.name.a.scram-sha-512.connections.max.reauth.ms": "2000"}, ("A", "B"), inter=None)
    assert spec.reauth_ms == {"A": {"SCRAM-SHA-256": 5000, "SCRAM-SHA-512": 2000},
                              "B": {"SCRAM-SHA-256": 60000, "SCRAM-SHA-512": 60000}}
    with pytest.raises(SecurityConfigError, match="want a whole number"):
        _node({**base, "listener.name.b.connections.max.reauth.ms": "soon"}, ("A", "B"), inter=None)
    with pytest.raises(SecurityConfigError, match="not supported by tierlog"):
        _node({**base, "listener.name.b.gssapi.connections.max.reauth.ms": "1"}, ("A", "B"), inter=None)


def test_a_node_connecting_as_no_super_user_is_warned_about_when_acls_are_on():
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
            'password="pw" user_admin="pw";')
    props = {"listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
             "sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN",
             "listener.name.client.plain.sasl.jaas.config": jaas}
    spec = _node(props, ("CLIENT",), ("CONTROLLER",), inter="CLIENT")
    assert own_principal_warnings(props, spec, True) == []                              # no authorizer
    acls = {**props, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    warned = own_principal_warnings({**acls, "super.users": "User:admin"}, spec, True)
    assert len(warned) == 1 and "controller.listener.names listener as User:ANONYMOUS" in warned[0]
    assert own_principal_warnings({**acls, "super.users": "User:admin;User:ANONYMOUS"}, spec, True) == []
    warned = own_principal_warnings({**acls, "super.users": "User:ANONYMOUS"}, spec, True)
    assert len(warned) == 1 and "inter.broker.listener.name listener as User:admin" in warned[0]
    assert own_principal_warnings({**acls, "super.users": "User:ANONYMOUS"}, spec, False) == []   # a controller


def test_client_security_accepts_kafka_and_librdkafka_names(certs):
    java = client_security({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                            "ssl.truststore.location": str(certs["ca"])})
    rdkafka = client_security({"security.protocol": "ssl", "ssl.ca.location": str(certs["ca"]),
                               "ssl.certificate.location": str(certs["client"].cert),
                               "ssl.key.location": str(certs["client"].key)})
    assert java.ssl.truststore_location == rdkafka.ssl.truststore_location == str(certs["ca"])
    assert rdkafka.ssl.keystore_key_location == str(certs["client"].key)
    assert client_security({}) == PLAINTEXT
    sasl = client_security({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "plain",
                            "sasl.username": "alice", "sasl.password": "pw"})
    assert (sasl.sasl.mechanism, sasl.sasl.username, sasl.sasl.password) == ("PLAIN", "alice", "pw")
    for bad, message in (({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "needs a user"),
                         ({"security.protocol": "SASL_PLAINTEXT", "sasl.username": "a", "sasl.password": "b"},
                          "GSSAPI is not supported"),          # Kafka's and librdkafka's default
                         ({"sasl.username": "a"}, "security.protocol is PLAINTEXT"),
                         ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                           "sasl.kerberos.service.name": "kafka"}, "not a client sasl setting")):
        with pytest.raises(SecurityConfigError, match=message):
            client_security(bad)
    with pytest.raises(SecurityConfigError, match="security.protocol is PLAINTEXT"):
        client_security({"ssl.ca.location": str(certs["ca"])})


def test_unreadable_stores_fail_in_one_line(certs, tmp_path):
    bad = client_security({"security.protocol": "SSL", "ssl.keystore.type": "PKCS12",
                           "ssl.keystore.location": str(certs["node"].pkcs12), "ssl.keystore.password": "wrong"})
    with pytest.raises(SecurityConfigError, match="not a PKCS12 store or a wrong password"):
        client_context(bad.ssl)
    missing = client_security({"security.protocol": "SSL", "ssl.keystore.location": str(tmp_path / "none.pem")})
    with pytest.raises(SecurityConfigError, match="cannot load the key and certificate chain") as e:
        client_context(missing.ssl)
    assert "\n" not in str(e.value)


def test_pkcs12_and_inline_pem_keystores_load(certs):
    p12 = _node({"listener.security.protocol.map": "PLAINTEXT:SSL", "ssl.keystore.type": "PKCS12",
                 "ssl.keystore.location": str(certs["node"].pkcs12), "ssl.keystore.password": "p12pass"})
    inline = _node({"listener.security.protocol.map": "PLAINTEXT:SSL",
                    "ssl.keystore.certificate.chain": certs["node"].cert.read_text(),
                    "ssl.keystore.key": certs["node"].key.read_text()})
    for spec in (p12, inline):
        assert isinstance(server_context(spec.listeners["PLAINTEXT"].ssl), ssl.SSLContext)


# -- the one outbound connect against a TLS server ---------------------------------------------------

def _handler(frame, _host, _received_ns=None):
    header, _ = decode_request_header(frame)
    return list(encode_response(ApiKey.API_VERSIONS, 0, header.correlation_id, ANSWER))


async def _serve(context: ssl.SSLContext | None):
    limits = Limits(1 << 20, 10, ConnectionQuotas(100, 100, {}), MemoryPool(1 << 24), read_ms=2000)
    server = Server(_handler, limits, context)
    port = await server.serve(bind("127.0.0.1", 0))
    return server, port


def _client(certs, *, mutual: bool, ca="ca") -> dict:
    props = {"security.protocol": "SSL", "ssl.ca.location": str(certs[ca])}
    if mutual:
        props |= {"ssl.certificate.location": str(certs["client"].cert), "ssl.key.location": str(certs["client"].key)}
    return props


def _listener(certs, client_auth: str):
    spec = _node({"listener.security.protocol.map": "PLAINTEXT:SSL", "ssl.keystore.type": "PEM",
                  "ssl.keystore.location": str(certs["node"].keystore), "ssl.truststore.type": "PEM",
                  "ssl.truststore.location": str(certs["ca"]), "ssl.client.auth": client_auth})
    return server_context(spec.listeners["PLAINTEXT"].ssl)


def test_blocking_and_asyncio_connections_speak_tls(certs):
    async def run():
        server, port = await _serve(_listener(certs, "required"))
        try:
            security = client_security(_client(certs, mutual=True))
            blocking = await asyncio.to_thread(
                lambda: BlockingConnection("127.0.0.1", port, client_id="t", timeout_s=5, security=security))
            answer = await asyncio.to_thread(blocking.request, ApiKey.API_VERSIONS, 0, {})
            blocking.close()
            peer = PeerConnection("localhost", port, "t", security=security)
            assert (await peer.request(ApiKey.API_VERSIONS, 0, {}, 5))["ApiKeys"] == answer["ApiKeys"]
            peer.close()
        finally:
            await server.stop()
    asyncio.run(run())


@pytest.mark.parametrize(("client", "reason"), [
    ({"mutual": False}, "cannot connect|closed|reset|alert"),          # required client certificate missing
    ({"mutual": True, "ca": "other_ca"}, "certificate verification failed"),   # server not trusted
])
def test_refused_tls_peers_get_clear_errors(certs, client, reason):
    async def run():
        server, port = await _serve(_listener(certs, "required"))
        try:
            security = client_security(_client(certs, **client))

            def attempt():
                conn = BlockingConnection("127.0.0.1", port, client_id="t", timeout_s=5, security=security)
                try:
                    conn.request(ApiKey.API_VERSIONS, 0, {})
                finally:
                    conn.close()
            with pytest.raises(PeerUnavailable, match=reason):
                await asyncio.to_thread(attempt)
            assert server.connection_count == 0
        finally:
            await server.stop()
    asyncio.run(run())


def test_plaintext_client_to_a_tls_listener_is_closed(certs):
    async def run():
        server, port = await _serve(_listener(certs, "none"))
        try:
            def attempt():
                conn = BlockingConnection("127.0.0.1", port, client_id="t", timeout_s=5)
                try:
                    conn.request(ApiKey.API_VERSIONS, 0, {})
                finally:
                    conn.close()
            with pytest.raises(PeerUnavailable, match="closed|reset"):
                await asyncio.to_thread(attempt)
        finally:
            await server.stop()
    asyncio.run(run())


def test_file_regions_go_through_tls_not_sendfile(certs, tmp_path):
    """A region above SENDFILE_MIN_BYTES on a TLS connection arrives intact (encrypted by the
    transport): sendfile would write cleartext past TLS and break the stream."""
    import os

    from tierlog.net.answer_order import SENDFILE_MIN_BYTES
    data = os.urandom(SENDFILE_MIN_BYTES * 3)
    path = tmp_path / "region"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)

    class Region:
        def __init__(self):
            self.fd, self.offset = fd, 0

        def __len__(self):
            return len(data)

        def read(self):
            return os.pread(fd, len(data), 0)

    async def run():
        limits = Limits(1 << 20, 10, ConnectionQuotas(100, 100, {}), MemoryPool(1 << 24))
        server = Server(lambda frame, host, received_ns: [b"\x00\x00\x00\x07", Region()], limits, _listener(certs, "none"))
        port = await server.serve(bind("127.0.0.1", 0))
        try:
            def fetch():
                context = client_context(client_security(_client(certs, mutual=False)).ssl)
                with socket.create_connection(("127.0.0.1", port), 5) as raw, \
                        context.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
                    sock.sendall(b"\x00\x00\x00\x01x")
                    got = b""
                    while len(got) < 4 + 4 + len(data):
                        chunk = sock.recv(1 << 16)
                        assert chunk
                        got += chunk
                    return got
            got = await asyncio.to_thread(fetch)
            assert got[8:] == data
        finally:
            await server.stop()
            os.close(fd)
    asyncio.run(run())
