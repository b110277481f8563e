"""SCRAM (RFC 5802 / 7677): the credential formulas, the exchange against RFC 7677's test
vector, failures that look alike for a wrong password and an unknown user, the SASL gate
with SCRAM frames, and the node / client security specs that enable it."""

import base64

import pytest

from tierlog.metadata.scram import (
    ScramMechanism,
    client_key,
    credential_from_salted_password,
    hmac_of,
    new_credential,
    salted_password,
    stored_key,
)
from tierlog.net.client_security import client_security, to_librdkafka
from tierlog.net.node_security import node_security
from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.net.sasl_client import ClientExchange
from tierlog.net.sasl_gate import sasl_sessions
from tierlog.net.sasl_scram import (
    SaslFailure,
    ScramClient,
    ScramServer,
    scram_failure_message,
)
from tierlog.net.security import SaslCredentials, SecurityConfigError
from tierlog.net.server import CloseConnection
from tierlog.protocol import decode_response, encode_request
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
# RFC 7677 section 3
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE, RFC_SERVER_NONCE = "rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"


def _rfc_credential():
    return credential_from_salted_password(SHA256, RFC_SALT, salted_password(SHA256, "pencil", RFC_SALT, 4096), 4096)


def test_rfc7677_exchange_both_sides():
    server = ScramServer(SHA256, lambda m, u: _rfc_credential() if (m, u) == (SHA256, "user") else None,
                         nonce=lambda: RFC_SERVER_NONCE)
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = server.evaluate(client.first())
    assert server_first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = client.final(server_first)
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    server_final = server.evaluate(final)
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    client.verify(server_final)
    assert server.complete and server.user == "user"
    with pytest.raises(SaslFailure):
        server.evaluate(final)                       # nothing after the end


def _login(server, user, password, mechanism=SHA512):
    client = ScramClient(mechanism, user, password)
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))


def test_wrong_password_and_unknown_user_fail_alike_at_the_proof():
    alice = new_credential(SHA512, "alice-secret", 8192)
    lookup = {(SHA512, "alice"): alice}.get

    def server():
        return ScramServer(SHA512, lambda m, u: lookup((m, u)))
    _login(server(), "alice", "alice-secret")
    for user, password in (("alice", "wrong"), ("mallory", "alice-secret")):
        s = server()
        client = ScramClient(SHA512, user, password)
        first = s.evaluate(client.first())       # an unknown user gets a salt and iterations too
        assert b",s=" in first and first.endswith(b",i=4096" if user == "mallory" else b",i=8192")
        with pytest.raises(SaslFailure):
            s.evaluate(client.final(first))
        assert not s.complete
    # the unknown user's fake salt is stable (a guesser cannot tell it from a real one by asking twice)
    firsts = [server().evaluate(ScramClient(SHA512, "mallory", "x").first()).split(b",")[1] for _ in range(2)]
    assert firsts[0] == firsts[1]


def test_malformed_messages_and_tampering_fail():
    cred = new_credential(SHA256, "pw")
    for first in (b"y,,n=u,r=abc", b"p=tls-unique,,n=u,r=abc", b"n,,r=abc", b"n,,n=u", b"n,a=other,n=u,r=abc",
                  b"n,,n=u=2,r=abc", b"\xff", b"n,,n=u,r=" + b"x" * 9000):
        with pytest.raises(SaslFailure):
            ScramServer(SHA256, lambda m, u: cred).evaluate(first)
    client = ScramClient(SHA256, "u", "pw")
    server = ScramServer(SHA256, lambda m, u: cred)
    final = client.final(server.evaluate(client.first()))
    other = ScramServer(SHA256, lambda m, u: cred)
    other.evaluate(b"n,,n=u,r=other")
    with pytest.raises(SaslFailure, match="nonce"):
        other.evaluate(final)                        # a final message replayed on another exchange
    forged = final.replace(b"c=biws", b"c=" + base64.b64encode(b"n,a=u,"))
    with pytest.raises(SaslFailure, match="channel binding"):
        server.evaluate(forged)
    # the client checks the server's signature: a server without the user's ServerKey is refused
    with pytest.raises(SaslFailure, match="signature"):
        client.verify(b"v=" + base64.b64encode(bytes(32)))
    with pytest.raises(SaslFailure, match="server error: other-error"):
        client.verify(b"e=other-error")


def test_a_final_nonce_ending_with_the_servers_is_accepted_as_kafka_does():
    """librdkafka up to 2.0 (Debian's kcat) answers r=<client nonce><client nonce><server nonce>."""
    cred = new_credential(SHA256, "pw")
    server = ScramServer(SHA256, lambda m, u: cred)
    first = server.evaluate(b"n,,n=u,r=cn0nce").decode()
    without_proof = "c=biws,r=cn0nce" + first.split(",")[0][2:]
    key = client_key(SHA256, salted_password(SHA256, "pw", cred.salt, cred.iterations))
    signature = hmac_of(SHA256, stored_key(SHA256, key), f"n=u,r=cn0nce,{first},{without_proof}".encode())
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(key, signature, strict=True))).decode()
    assert server.evaluate(f"{without_proof},p={proof}".encode()).startswith(b"v=") and server.complete


def test_stored_iterations_below_the_minimum_never_authenticate():
    weak = new_credential(SHA256, "pw", iterations=1000)
    with pytest.raises(SaslFailure):
        _login(ScramServer(SHA256, lambda m, u: weak), "u", "pw", SHA256)


def _frame(api_key, version, body):
    return bytearray(encode_request(api_key, version, 7, "t", body))


def _answer(api_key, version, parts):
    return decode_response(api_key, version, b"".join(bytes(p) for p in parts))[1]


def _gate(cred):
    seen = []
    def factory():
        return ScramServer(SHA512, lambda m, u: cred if u == "alice" else None)
    return sasl_sessions("SASL_SSL", {"SCRAM-SHA-512": factory}, failure_delay_s=0.1)(
        lambda f, h, r=None, **_: seen.append(f) or ["in"]), seen


def test_gate_runs_two_scram_round_trips_then_passes_requests():
    gate, _ = _gate(new_credential(SHA512, "alice-secret"))
    hello = _answer(ApiKey.SASL_HANDSHAKE, 1, gate(_frame(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "SCRAM-SHA-512"})))
    assert hello["ErrorCode"] == 0 and hello["Mechanisms"] == ["SCRAM-SHA-512"]
    login = ClientExchange(SaslCredentials("SCRAM-SHA-512", "alice", "alice-secret"))
    token = login.first()
    rounds = 0
    while token is not None:
        answer = _answer(ApiKey.SASL_AUTHENTICATE, 2, gate(_frame(ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": token})))
        token = login.next(answer)
        rounds += 1
    assert rounds == 2 and gate.principal == "User:alice"
    assert gate(_frame(ApiKey.METADATA, 12, {"Topics": None, "AllowAutoTopicCreation": False})) == ["in"]


def test_gate_runs_scram_over_raw_tokens_after_a_v0_handshake():
    gate, seen = _gate(new_credential(SHA512, "alice-secret"))
    gate(_frame(ApiKey.SASL_HANDSHAKE, 0, {"Mechanism": "SCRAM-SHA-512"}))
    client = ScramClient(SHA512, "alice", "alice-secret")
    [server_first] = gate(bytearray(client.first()))
    [server_final] = gate(bytearray(client.final(server_first)))
    client.verify(server_final)
    assert gate.principal == "User:alice" and not seen


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "x")])
def test_gate_failure_is_kafkas_message_and_closes(user, password):
    gate, seen = _gate(new_credential(SHA512, "alice-secret"))
    gate(_frame(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "SCRAM-SHA-512"}))
    client = ScramClient(SHA512, user, password)
    first = _answer(ApiKey.SASL_AUTHENTICATE, 1, gate(_frame(ApiKey.SASL_AUTHENTICATE, 1, {"AuthBytes": client.first()})))
    assert first["ErrorCode"] == 0
    with pytest.raises(CloseConnection) as closed:
        gate(_frame(ApiKey.SASL_AUTHENTICATE, 1, {"AuthBytes": client.final(first["AuthBytes"])}))
    assert closed.value.linger_s == 0.1              # connection.failed.authentication.delay.ms (KIP-306)
    answer = _answer(ApiKey.SASL_AUTHENTICATE, 1, closed.value.response)
    assert answer["ErrorCode"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert answer["ErrorMessage"] == scram_failure_message(SHA512) == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")
    assert not seen and gate.principal is None
    login = ClientExchange(SaslCredentials("SCRAM-SHA-512", user, password))
    with pytest.raises(PeerUnavailable, match="invalid credentials"):
        login.next(answer)


SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="s3";'
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="s3" '
              'user_admin="s3";')


def _node(**extra):
    props = {"listener.security.protocol.map": "SASL_SSL:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
             "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
             "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
             "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
             "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
             "sasl.mechanism.controller.protocol": "PLAIN",
             "listener.name.controller.plain.sasl.jaas.config": PLAIN_JAAS, **extra}
    return node_security(props, ["SASL_SSL", "CONTROLLER"], ["CONTROLLER"], "SASL_SSL")


def test_node_security_scram_listeners_and_logins():
    spec = _node()
    assert spec.sasl == {"SASL_SSL": {"SCRAM-SHA-512": None, "SCRAM-SHA-256": None}, "CONTROLLER": {"PLAIN": PLAIN_JAAS}}
    assert spec.inter_broker.sasl == SaslCredentials("SCRAM-SHA-512", "admin", "s3")
    assert spec.controller.sasl == SaslCredentials("PLAIN", "admin", "s3")
    with pytest.raises(SecurityConfigError, match="SCRAM cannot authenticate controllers"):
        _node(**{"sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
                 "listener.name.controller.scram-sha-512.sasl.jaas.config": SCRAM_JAAS})
    with pytest.raises(SecurityConfigError, match="SCRAM cannot authenticate controllers"):
        _node(**{"listener.name.controller.sasl.enabled.mechanisms": "SCRAM-SHA-256"})
    with pytest.raises(SecurityConfigError, match="want org.apache.kafka.common.security.scram.ScramLoginModule"):
        _node(**{"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": PLAIN_JAAS})


def test_client_security_scram_from_java_or_librdkafka_names():
    java = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": SCRAM_JAAS}
    assert client_security(java).sasl == SaslCredentials("SCRAM-SHA-256", "admin", "s3")
    assert to_librdkafka(java) == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                                   "sasl.username": "admin", "sasl.password": "s3"}
    rdkafka = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "a",
               "sasl.password": "b"}
    assert client_security(rdkafka).sasl == SaslCredentials("SCRAM-SHA-512", "a", "b")
    with pytest.raises(SecurityConfigError, match="SCRAM-SHA-1 is not supported"):
        client_security({**rdkafka, "sasl.mechanisms": "SCRAM-SHA-1"})
