"""SASL PLAIN and the per-connection SASL gate, driven with encoded frames (no sockets)."""

import pytest

from tierlog.net.sasl_gate import PlainSession, SaslGate, _FailureLog, sasl_sessions
from tierlog.net.sasl_plain import FAILED, PlainAuthenticator, parse_plain_jaas
from tierlog.net.security import SecurityConfigError
from tierlog.net.server import CloseConnection
from tierlog.protocol import decode_response, encode_request
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="al\\"ice";')


def test_jaas_options_and_users():
    assert parse_plain_jaas("k", JAAS) == {"username": "admin", "password": "admin-secret",
                                           "user_admin": "admin-secret", "user_alice": 'al"ice'}
    plain = PlainAuthenticator.from_jaas("k", JAAS)
    assert plain.authenticate(b'\x00alice\x00al"ice') == "alice"
    assert plain.authenticate(b'alice\x00alice\x00al"ice') == "alice"          # authzid = the user
    for token in (b"\x00alice\x00wrong", b"\x00mallory\x00x", b"bob\x00alice\x00al\"ice", b"alice", b"\xff\x00a\x00b",
                  b"\x00\x00admin-secret"):
        assert plain.authenticate(token) is None
    for bad, message in (("Other required;", "want org.apache"), (JAAS.rstrip(";"), "end with ';'"),
                         (JAAS.replace("required", "optional"), "must be 'required'"),
                         ('org.apache.kafka.common.security.plain.PlainLoginModule required user_a=b;', "cannot parse"),
                         ('org.apache.kafka.common.security.plain.PlainLoginModule required username="a";', "no users")):
        with pytest.raises(SecurityConfigError, match=message):
            PlainAuthenticator.from_jaas("k", bad)


class Inner:
    def __init__(self):
        self.seen = []
        self.principals = []

    def __call__(self, frame, host, received_ns=None, principal="User:ANONYMOUS"):
        self.seen.append(bytes(frame))
        self.principals.append(principal)
        return ["inner"]


def _gate():
    inner = Inner()
    return sasl_sessions("SASL", {"PLAIN": PlainAuthenticator.from_jaas("k", JAAS)})(inner), inner


def _frame(api_key, version, body):
    return bytearray(encode_request(api_key, version, 7, "t", body))


def _answer(api_key, version, parts):
    return decode_response(api_key, version, b"".join(bytes(p) for p in parts))[1]


def test_handshake_then_authenticate_then_everything_passes():
    gate, inner = _gate()
    assert gate(_frame(ApiKey.API_VERSIONS, 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"})) \
        == ["inner"]
    hello = _answer(ApiKey.SASL_HANDSHAKE, 1, gate(_frame(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})))
    assert hello == {"ErrorCode": 0, "Mechanisms": ["PLAIN"]}
    done = _answer(ApiKey.SASL_AUTHENTICATE, 2, gate(_frame(ApiKey.SASL_AUTHENTICATE, 2,
                                                            {"AuthBytes": b'\x00alice\x00al"ice'})))
    assert done["ErrorCode"] == 0 and done["SessionLifetimeMs"] == 0 and gate.principal == "User:alice"
    metadata = _frame(ApiKey.METADATA, 12, {"Topics": None, "AllowAutoTopicCreation": False})
    assert gate(metadata) == ["inner"] and inner.seen[-1] == bytes(metadata)
    assert inner.principals[-1] == "User:alice"          # what the ACL checks see


def test_a_wrong_password_is_answered_then_closed():
    gate, _ = _gate()
    gate(_frame(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"}))
    with pytest.raises(CloseConnection) as e:
        gate(_frame(ApiKey.SASL_AUTHENTICATE, 1, {"AuthBytes": b"\x00alice\x00nope"}))
    answer = _answer(ApiKey.SASL_AUTHENTICATE, 1, e.value.response)
    assert answer["ErrorCode"] == ErrorCode.SASL_AUTHENTICATION_FAILED and answer["ErrorMessage"] == FAILED
    assert gate.principal is None


def test_an_unknown_mechanism_is_answered_with_the_list_then_closed():
    gate, _ = _gate()
    with pytest.raises(CloseConnection) as e:
        gate(_frame(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "SCRAM-SHA-512"}))
    assert _answer(ApiKey.SASL_HANDSHAKE, 1, e.value.response) == {
        "ErrorCode": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Mechanisms": ["PLAIN"]}


@pytest.mark.parametrize("frames", [
    [(ApiKey.METADATA, 12, {"Topics": None, "AllowAutoTopicCreation": False})],              # before any SASL
    [(ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": b"\x00a\x00b"})],                            # before the handshake
    [(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"}),
     (ApiKey.METADATA, 12, {"Topics": None, "AllowAutoTopicCreation": False})],              # between the two
])
def test_out_of_order_requests_close_the_connection(frames):
    gate, inner = _gate()
    *first, last = frames
    for frame in first:
        gate(_frame(*frame))
    with pytest.raises(CloseConnection, match="ILLEGAL_SASL_STATE"):
        gate(_frame(*last))
    assert inner.seen == []


# -- SaslHandshake v0 (KIP-43): raw tokens -------------------------------------------------------------
def test_after_a_v0_handshake_tokens_are_raw_frames():
    gate, inner = _gate()
    hello = _answer(ApiKey.SASL_HANDSHAKE, 0, gate(_frame(ApiKey.SASL_HANDSHAKE, 0, {"Mechanism": "PLAIN"})))
    assert hello == {"ErrorCode": 0, "Mechanisms": ["PLAIN"]}
    assert gate(bytearray(b'\x00alice\x00al"ice')) == [b""]       # PLAIN's empty answer, no header
    assert gate.principal == "User:alice"
    metadata = _frame(ApiKey.METADATA, 12, {"Topics": None, "AllowAutoTopicCreation": False})
    assert gate(metadata) == ["inner"] and inner.principals == ["User:alice"]


def test_a_raw_token_that_fails_closes_unanswered_and_late():
    inner = Inner()
    gate = sasl_sessions("SASL", {"PLAIN": PlainAuthenticator.from_jaas("k", JAAS)}, failure_delay_s=0.1)(inner)
    gate(_frame(ApiKey.SASL_HANDSHAKE, 0, {"Mechanism": "PLAIN"}))
    with pytest.raises(CloseConnection) as e:
        gate(_frame(ApiKey.METADATA, 12, {"Topics": None, "AllowAutoTopicCreation": False}))   # a token, not a request
    assert e.value.response is None and e.value.linger_s == 0.1 and e.value.logged
    assert gate.principal is None and inner.seen == []


# -- KIP-368 re-authentication -------------------------------------------------------------------------
JAAS2 = JAAS.replace("user_alice", 'user_bob="bob-secret" user_alice')
_METADATA = (ApiKey.METADATA, 12, {"Topics": None, "AllowAutoTopicCreation": False})


class Clock:
    now = 100.0

    def __call__(self):
        return self.now


def _reauth_gate(reauth_ms=3000):
    inner, clock = Inner(), Clock()
    gate = SaslGate(inner, {"PLAIN": lambda: PlainSession(PlainAuthenticator.from_jaas("k", JAAS2)),
                            "SCRAM-SHA-256": lambda: PlainSession(PlainAuthenticator.from_jaas("k", JAAS2))},
                    _FailureLog("SASL"), reauth_ms={"PLAIN": reauth_ms}, clock=clock)
    return gate, inner, clock


def _login(gate, token=b'\x00alice\x00al"ice', mechanism="PLAIN", version=2):
    hello = _answer(ApiKey.SASL_HANDSHAKE, 1, gate(_frame(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": mechanism})))
    assert hello["ErrorCode"] == 0
    return gate(_frame(ApiKey.SASL_AUTHENTICATE, version, {"AuthBytes": token}))


def test_a_session_lifetime_is_announced_and_renewed_by_re_authentication():
    gate, inner, clock = _reauth_gate()
    assert _answer(ApiKey.SASL_AUTHENTICATE, 2, _login(gate))["SessionLifetimeMs"] == 3000
    clock.now += 2.9
    assert gate(_frame(*_METADATA)) == ["inner"]
    assert _answer(ApiKey.SASL_AUTHENTICATE, 1, _login(gate, version=1))["SessionLifetimeMs"] == 3000
    clock.now += 2.9                                      # 5.8 s after the first login, 2.9 after the second
    assert gate(_frame(*_METADATA)) == ["inner"] and inner.principals[-1] == "User:alice"


def test_the_first_request_after_the_expiry_closes_the_connection_unanswered():
    gate, inner, clock = _reauth_gate()
    _login(gate, version=0)                               # v0 has no SessionLifetimeMs: expires all the same
    clock.now += 3.001
    with pytest.raises(CloseConnection, match="expired") as e:
        gate(_frame(*_METADATA))
    assert e.value.response is None and inner.seen == []


def test_an_expired_session_may_still_re_authenticate():
    gate, _, clock = _reauth_gate()
    _login(gate)
    clock.now += 60
    assert _answer(ApiKey.SASL_AUTHENTICATE, 2, _login(gate))["ErrorCode"] == 0
    assert gate(_frame(*_METADATA)) == ["inner"]


@pytest.mark.parametrize("reauth_ms, wait_s", [(0, 60.0), (3000, 0.5)])
def test_a_handshake_without_a_lifetime_or_too_soon_goes_to_the_dispatcher(reauth_ms, wait_s):
    gate, inner, clock = _reauth_gate(reauth_ms)
    _login(gate)
    if reauth_ms:
        _login(gate)                                       # a re-authentication ...
    clock.now += wait_s                                    # ... less than 1 s before this one: Kafka refuses
    handshake = _frame(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})
    assert gate(handshake) == ["inner"] and inner.seen[-1] == bytes(handshake)    # api_17: ILLEGAL_SASL_STATE


def test_re_authentication_keeps_the_principal_and_the_mechanism():
    gate, _, _ = _reauth_gate()
    _login(gate)
    with pytest.raises(CloseConnection) as e:
        _login(gate, token=b"\x00bob\x00bob-secret")
    assert _answer(ApiKey.SASL_AUTHENTICATE, 2, e.value.response) == {
        "ErrorCode": ErrorCode.SASL_AUTHENTICATION_FAILED, "AuthBytes": b"", "SessionLifetimeMs": 0,
        "ErrorMessage": "Cannot change principals during re-authentication from User.alice: User.bob"}
    gate, _, _ = _reauth_gate()
    _login(gate)
    with pytest.raises(CloseConnection) as e:
        _login(gate, mechanism="SCRAM-SHA-256")
    assert _answer(ApiKey.SASL_AUTHENTICATE, 2, e.value.response)["ErrorMessage"] == (
        "SASL mechanism 'SCRAM-SHA-256' requested by client is not supported for re-authentication of mechanism "
        "'PLAIN'")


def test_a_v0_handshake_cannot_re_authenticate():
    gate, inner, _ = _reauth_gate()
    _login(gate)
    with pytest.raises(CloseConnection, match="ILLEGAL_SASL_STATE"):
        gate(_frame(ApiKey.SASL_HANDSHAKE, 0, {"Mechanism": "PLAIN"}))
    assert inner.seen == []


def test_a_failed_re_authentication_closes_the_connection():
    gate, inner, _ = _reauth_gate()
    _login(gate)
    gate(_frame(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"}))
    with pytest.raises(CloseConnection, match="ILLEGAL_SASL_STATE"):     # nothing else until it is done
        gate(_frame(*_METADATA))
    assert inner.seen == []
    gate, _, _ = _reauth_gate()
    _login(gate)
    with pytest.raises(CloseConnection) as e:
        _login(gate, token=b"\x00alice\x00wrong")
    assert _answer(ApiKey.SASL_AUTHENTICATE, 2, e.value.response)["ErrorMessage"] == FAILED
