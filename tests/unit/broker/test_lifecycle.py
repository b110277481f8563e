import pytest

from tierlog.broker.lifecycle import (
    FAST_HEARTBEAT_MS,
    BrokerLifecycleManager,
    BrokerState,
    Endpoint,
)
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

INC = bytes(range(16))


def _mgr(**config):
    return BrokerLifecycleManager(1, INC, [Endpoint("PLAINTEXT", "127.0.0.1", 9092)], "r1",
                                  config, cluster_id="c1")


def _hb(fenced=True, caught_up=False, shut=False, error=0):
    return {"ErrorCode": error, "IsFenced": fenced, "IsCaughtUp": caught_up, "ShouldShutDown": shut,
            "ThrottleTimeMs": 0}


def _registered(m, now=0, epoch=42):
    req = m.next_request(now, -1)
    assert req.api_key == ApiKey.BROKER_REGISTRATION
    m.handle_response({"ErrorCode": 0, "BrokerEpoch": epoch, "ThrottleTimeMs": 0}, now)
    return req


def test_registration_request_fields():
    m = _mgr()
    req = _registered(m)
    r = req.request
    assert r["BrokerId"] == 1 and r["ClusterId"] == "c1" and r["IncarnationId"] == INC and r["Rack"] == "r1"
    assert r["Listeners"] == [{"Name": "PLAINTEXT", "Host": "127.0.0.1", "Port": 9092, "SecurityProtocol": 0}]
    assert r["PreviousBrokerEpoch"] == -1
    assert m.state is BrokerState.RECOVERY and m.broker_epoch == 42


def test_one_request_in_flight():
    m = _mgr()
    assert m.next_request(0, -1) is not None
    assert m.next_request(0, -1) is None
    assert m.next_deadline_ms() is None


def test_recovery_to_running_then_slow_heartbeats():
    m = _mgr()
    _registered(m)
    hb = m.next_request(0, 5)
    assert hb.api_key == ApiKey.BROKER_HEARTBEAT
    assert hb.request == {"BrokerId": 1, "BrokerEpoch": 42, "CurrentMetadataOffset": 5, "WantFence": False,
                          "WantShutDown": False, "OfflineLogDirs": []}
    m.handle_response(_hb(fenced=True, caught_up=False), 0)
    assert m.state is BrokerState.RECOVERY
    assert m.next_request(FAST_HEARTBEAT_MS - 1, 5) is None
    m.next_request(FAST_HEARTBEAT_MS, 50)
    m.handle_response(_hb(fenced=False, caught_up=True), FAST_HEARTBEAT_MS)
    assert m.state is BrokerState.RUNNING and not m.is_fenced and m.is_caught_up
    assert m.next_request(FAST_HEARTBEAT_MS + 1999, 50) is None
    assert m.next_request(FAST_HEARTBEAT_MS + 2000, 50) is not None


def test_fenced_again_while_running():
    m = _mgr()
    _registered(m)
    m.next_request(0, 5)
    m.handle_response(_hb(fenced=False), 0)
    m.next_request(2000, 5)
    m.handle_response(_hb(fenced=True), 2000)
    assert m.state is BrokerState.RECOVERY


def test_controlled_shutdown():
    m = _mgr()
    _registered(m)
    m.next_request(0, 5)
    m.handle_response(_hb(fenced=False), 0)
    m.begin_controlled_shutdown()
    assert m.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN
    req = m.next_request(1, 6)
    assert req.request["WantShutDown"] is True
    m.handle_response(_hb(fenced=False, shut=False), 1)
    assert m.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN
    req = m.next_request(1 + FAST_HEARTBEAT_MS, 7)
    m.handle_response(_hb(fenced=True, shut=True), 20)
    assert m.state is BrokerState.SHUTTING_DOWN
    assert m.next_request(10_000, 7) is None


def test_shutdown_before_registration():
    m = _mgr()
    m.begin_controlled_shutdown()
    assert m.state is BrokerState.SHUTTING_DOWN
    assert m.next_request(0, -1) is None


def test_failure_backoff_is_exponential_and_capped():
    m = _mgr()
    now, delays = 0, []
    for _ in range(6):
        assert m.next_request(now, -1) is not None
        m.handle_failure(now)
        delays.append(m.next_deadline_ms() - now)
        now = m.next_deadline_ms()
    assert delays == [100, 200, 400, 800, 1000, 1000]
    m.next_request(now, -1)
    m.handle_response({"ErrorCode": 0, "BrokerEpoch": 7}, now)
    assert m.next_deadline_ms() == now


def test_not_controller_and_duplicate_registration_retry():
    m = _mgr()
    m.next_request(0, -1)
    m.handle_response({"ErrorCode": ErrorCode.NOT_CONTROLLER, "BrokerEpoch": -1}, 0)
    assert m.state is BrokerState.STARTING and m.next_deadline_ms() == 100
    m.next_request(100, -1)
    m.handle_response({"ErrorCode": ErrorCode.DUPLICATE_BROKER_REGISTRATION, "BrokerEpoch": -1}, 100)
    assert m.state is BrokerState.STARTING and m.next_deadline_ms() == 300


@pytest.mark.parametrize("error", [ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED])
def test_forgotten_broker_registers_again(error):
    m = _mgr()
    _registered(m)
    m.next_request(0, 5)
    m.handle_response(_hb(fenced=False), 0)
    m.next_request(2000, 5)
    m.handle_response(_hb(error=error), 2000)
    assert m.state is BrokerState.STARTING and m.broker_epoch == -1
    req = m.next_request(2000, 5)
    assert req.api_key == ApiKey.BROKER_REGISTRATION and req.request["PreviousBrokerEpoch"] == 42


def test_illegal_transition_asserts():
    m = _mgr()
    with pytest.raises(AssertionError):
        m._transition(BrokerState.RUNNING)


DIR_A, DIR_B = b"\x0a" * 16, b"\x0b" * 16


def _running_with_dirs(**config):
    m = BrokerLifecycleManager(1, INC, [Endpoint("PLAINTEXT", "127.0.0.1", 9092)], "r1", config,
                               cluster_id="c1", log_dirs=[DIR_A, DIR_B])
    req = _registered(m)
    assert req.request["LogDirs"] == [DIR_A, DIR_B]
    m.next_request(0, 5)
    m.handle_response(_hb(fenced=False, caught_up=True), 0)
    assert m.state is BrokerState.RUNNING
    return m


def test_a_failed_log_dir_is_reported_in_every_heartbeat_at_once():
    m = _running_with_dirs()
    assert m.next_request(1, 5) is None                     # next heartbeat not due yet
    m.propagate_directory_failure(DIR_A, 1)
    req = m.next_request(1, 5)                              # at once
    assert req.api_key == ApiKey.BROKER_HEARTBEAT and req.request["OfflineLogDirs"] == [DIR_A]
    m.handle_response(_hb(fenced=False, caught_up=True), 2)
    assert m.shutdown_reason(10**9) is None                 # reported; one dir is still online
    req = m.next_request(10**9, 5)
    assert req.request["OfflineLogDirs"] == [DIR_A]         # still carried
    m.handle_response(_hb(fenced=False, caught_up=True), 10**9)


def test_every_log_dir_failed_and_reported_means_shut_down():
    m = _running_with_dirs()
    m.propagate_directory_failure(DIR_A, 1)
    m.propagate_directory_failure(DIR_B, 1)
    req = m.next_request(1, 5)
    assert sorted(req.request["OfflineLogDirs"]) == [DIR_A, DIR_B]
    assert m.shutdown_reason(2) is None                     # not acknowledged yet
    m.handle_response(_hb(fenced=True, caught_up=True), 2)
    assert m.shutdown_reason(3) == "every log dir failed"


def test_a_failure_not_reported_within_log_dir_failure_timeout_means_shut_down():
    m = _running_with_dirs(**{"log.dir.failure.timeout.ms": 1000})
    m.propagate_directory_failure(DIR_A, 100)
    m.next_request(100, 5)
    m.handle_failure(200)                                   # no controller
    assert m.shutdown_reason(1099) is None
    assert "log.dir.failure.timeout.ms (1000 ms)" in m.shutdown_reason(1100)
