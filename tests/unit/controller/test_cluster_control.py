from controller_helpers import Harness, heartbeat, registration

from tierlog.metadata.cluster_records import (
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
)
from tierlog.protocol.errors import ErrorCode


def test_broker_epoch_is_the_registration_offset():
    h = Harness()
    r1 = h.register(1)
    r2 = h.register(2)
    assert isinstance(r1.records[0], RegisterBrokerRecord)
    assert r1.response["BrokerEpoch"] == r1.base_offset == 0
    assert r2.response["BrokerEpoch"] == r2.base_offset == 1
    assert h.qc.image.brokers[1].fenced and h.qc.image.brokers[1].epoch == 0


def test_unfenced_once_caught_up():
    h = Harness()
    h.register(1)
    h.register(2)
    r = h.heartbeat(2, offset=0)                  # behind its registration (offset 1)
    assert r.records == [] and r.response["IsFenced"] and not r.response["IsCaughtUp"]
    r = h.heartbeat(2, offset=1)
    assert r.records == [UnfenceBrokerRecord(id=2, epoch=1)]
    assert r.response == {"ThrottleTimeMs": 0, "ErrorCode": 0, "IsCaughtUp": True, "IsFenced": False,
                          "ShouldShutDown": False}
    assert not h.qc.image.brokers[2].fenced
    assert h.heartbeat(2).records == []           # already unfenced: nothing to write


def test_want_fence_keeps_a_broker_fenced():
    h = Harness()
    h.register(1)
    r = h.heartbeat(1, want_fence=True)
    assert r.records == [] and r.response["IsFenced"]


def test_session_expiry_fences_and_heartbeat_unfences():
    h = Harness(broker_session_timeout_ms=9000)
    h.start_brokers(2)
    h.now = 5000
    h.heartbeat(1)
    assert h.qc.next_deadline_ms() == 9000        # broker 2's last contact was at 0
    h.now = 8999
    assert h.qc.tick(h.now) == []
    h.now = 9000
    assert h.qc.tick(h.now) == [FenceBrokerRecord(id=2, epoch=h.epochs[2])]
    assert h.qc.image.brokers[2].fenced and not h.qc.image.brokers[1].fenced
    assert h.qc.tick(h.now) == []                 # fenced once
    h.now = 14000
    assert h.qc.tick(h.now) == [FenceBrokerRecord(id=1, epoch=h.epochs[1])]
    r = h.heartbeat(2)
    assert r.records == [UnfenceBrokerRecord(id=2, epoch=h.epochs[2])]


def test_unknown_and_stale_heartbeats():
    h = Harness()
    r = h.call(63, 1, heartbeat(9, 0, 0))
    assert r.response["ErrorCode"] == ErrorCode.BROKER_ID_NOT_REGISTERED
    h.register(1)
    r = h.call(63, 1, heartbeat(1, 77, 0))
    assert r.response["ErrorCode"] == ErrorCode.STALE_BROKER_EPOCH and r.records == []


def test_duplicate_registration_while_session_alive():
    h = Harness(broker_session_timeout_ms=9000)
    h.start_brokers(1)
    r = h.call(62, 3, registration(1, n=1))
    assert r.response == {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.DUPLICATE_BROKER_REGISTRATION, "BrokerEpoch": -1}
    r = h.call(62, 3, registration(1, n=0))       # same incarnation: a retry, new epoch
    assert r.response["ErrorCode"] == 0 and r.response["BrokerEpoch"] > h.epochs[1]
    h.now = 9000
    r = h.call(62, 3, registration(1, n=2))       # session ran out: the new incarnation may register
    assert r.response["ErrorCode"] == 0
    assert h.qc.image.brokers[1].incarnation_id == registration(1, n=2)["IncarnationId"]
    assert h.qc.image.brokers[1].fenced


def test_wrong_cluster_id():
    h = Harness()
    r = h.call(62, 3, registration(1, cluster_id="other"))
    assert r.response["ErrorCode"] == ErrorCode.INCONSISTENT_CLUSTER_ID


def test_controlled_shutdown_moves_leadership_then_says_shut_down():
    h = Harness()
    h.start_brokers(2)
    h.create_topic("t", partitions=4, rf=2)
    led_by_1 = [p for p in h.qc.image.topics["t"].partitions if p.leader == 1]
    assert led_by_1
    r = h.heartbeat(1, want_shutdown=True)
    assert r.records == [BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=h.epochs[1],
                                                        in_controlled_shutdown=1)]
    assert r.response["ShouldShutDown"] is False and r.response["IsFenced"] is False
    assert all(p.leader == 2 for p in h.qc.image.topics["t"].partitions)
    shutdown_offset = r.base_offset
    r = h.heartbeat(1, want_shutdown=True)
    assert r.response["ShouldShutDown"] is False  # broker 2 has not seen the change yet
    h.heartbeat(2, offset=shutdown_offset)
    r = h.heartbeat(1, want_shutdown=True)
    assert r.response["ShouldShutDown"] is True and r.records == [FenceBrokerRecord(id=1, epoch=h.epochs[1])]


def test_fenced_broker_wanting_shutdown_goes_at_once():
    h = Harness()
    h.register(1)
    r = h.heartbeat(1, want_shutdown=True)
    assert r.response["ShouldShutDown"] is True and r.records == []


def test_fencing_moves_leaders_without_partition_change_records():
    h = Harness()
    h.start_brokers(3)
    h.create_topic("t", partitions=6, rf=3)
    h.now = 9000
    h.heartbeat(2)
    h.heartbeat(3)
    records = h.qc.tick(h.now)
    assert records == [FenceBrokerRecord(id=1, epoch=h.epochs[1])]
    for p in h.qc.image.topics["t"].partitions:
        assert p.leader != 1 and 1 not in p.isr


def test_unregister():
    h = Harness()
    h.register(1)
    r = h.call(64, 0, {"BrokerId": 1})
    assert r.response["ErrorCode"] == 0 and 1 not in h.qc.image.brokers
    r = h.call(64, 0, {"BrokerId": 1})
    assert r.response["ErrorCode"] == ErrorCode.BROKER_ID_NOT_REGISTERED


DIR_A, DIR_B = b"\x0a" * 16, b"\x0b" * 16


def _with_dirs(h, broker_id, dirs):
    req = registration(broker_id)
    req["LogDirs"] = list(dirs)
    r = h.call(62, 3, req)
    h.epochs[broker_id] = r.response["BrokerEpoch"]
    assert h.heartbeat(broker_id).response["IsFenced"] is False
    assert h.qc.image.brokers[broker_id].log_dirs == tuple(dirs)


def _hb_offline(h, broker_id, offline, **kw):
    req = heartbeat(broker_id, h.epochs[broker_id], h.qc.next_offset - 1, **kw)
    req["OfflineLogDirs"] = list(offline)
    return h.call(63, 1, req)


def test_a_broker_whose_every_log_dir_is_offline_is_fenced_and_stays_fenced(caplog):
    h = Harness()
    h.start_brokers(1)
    _with_dirs(h, 2, [DIR_A, DIR_B])
    r = _hb_offline(h, 2, [DIR_A])                          # one of two: recorded, still unfenced
    assert r.records == [BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=h.epochs[2], log_dirs=(DIR_B,))]
    assert not r.response["IsFenced"] and h.qc.image.brokers[2].log_dirs == (DIR_B,)
    assert _hb_offline(h, 2, [DIR_A]).records == []         # nothing new
    with caplog.at_level("INFO", logger="tierlog.controller.cluster_control"):
        r = _hb_offline(h, 2, [DIR_A, DIR_B])
    assert r.records == [FenceBrokerRecord(id=2, epoch=h.epochs[2])] and r.response["IsFenced"]
    assert h.qc.image.brokers[2].fenced
    assert [m for m in caplog.messages if "fencing broker 2" in m] == [
        f"fencing broker 2 (epoch {h.epochs[2]}): every log dir offline (CwsLCwsLCwsLCwsLCwsLCw)"]
    r = _hb_offline(h, 2, [DIR_A, DIR_B])                   # caught up, but nothing to serve from
    assert r.records == [] and r.response["IsFenced"]
    assert _hb_offline(h, 2, [DIR_A, DIR_B], want_shutdown=True).response["ShouldShutDown"]


def test_fence_and_unfence_are_logged_with_their_reason(caplog):
    h = Harness(broker_session_timeout_ms=9000)
    with caplog.at_level("INFO", logger="tierlog.controller.cluster_control"):
        h.start_brokers(1)
        h.now = 9000
        h.qc.tick(h.now)
        h.heartbeat(1, want_fence=False)
        h.heartbeat(1, want_fence=True)
    assert caplog.messages == [
        "unfencing broker 1 (epoch 0): caught up with the metadata log (offset 0)",
        "fencing broker 1 (epoch 0): no heartbeat within broker.session.timeout.ms (9000 ms)",
        "unfencing broker 1 (epoch 0): caught up with the metadata log (offset 2)",
        "fencing broker 1 (epoch 0): it asked to be fenced (WantFence)"]
