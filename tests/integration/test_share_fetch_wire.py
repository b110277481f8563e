"""ShareFetch (78) / ShareAcknowledge (79) on the wire against a real broker (KIP-932), with
tierlog's own codec: share sessions, acquisition, accept / release / reject, piggy-backed
acknowledgements, acquisition lock expiry, and the state read back by a broker restarted from its
``__share_group_state`` (nothing acknowledged delivered again, nothing unacknowledged lost), also
once that topic was pruned, and a read_committed group handed only committed records."""
from __future__ import annotations

import pytest
from clients import create_topic, produce_all
from cluster import FAST_REPLICATION, request, wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.records.decoder import decode_batches

SHARE_PROPS = {**FAST_REPLICATION, "share.coordinator.state.topic.replication.factor": "1",
               "share.coordinator.state.topic.min.isr": "1", "share.coordinator.state.topic.num.partitions": "3",
               "group.share.record.lock.duration.ms": "1500", "group.share.min.record.lock.duration.ms": "1000",
               "group.share.delivery.count.limit": "3", "group.share.max.share.sessions": "2",
               "group.share.session.timeout.ms": "2000", "group.share.min.session.timeout.ms": "1000",
               "group.share.max.session.timeout.ms": "3000", "group.share.heartbeat.interval.ms": "500",
               "group.share.min.heartbeat.interval.ms": "500",
               "share.coordinator.snapshot.update.records.per.snapshot": "3",
               "share.coordinator.state.topic.prune.interval.ms": "300"}
pytestmark = [pytest.mark.integration, pytest.mark.cluster(controllers=1, brokers=1, props=SHARE_PROPS)]
ACCEPT, RELEASE, REJECT = 1, 2, 3


class Member:
    """One share-group member's session with the broker, by hand."""

    def __init__(self, broker, group: str, member: str, topic_id: bytes):
        self.broker, self.group, self.member, self.topic_id = broker, group, member, topic_id
        self.epoch = 0

    def fetch(self, acks=(), wait_ms: int = 0, max_records: int = 100) -> dict:
        partition = {"PartitionIndex": 0, "AcknowledgementBatches": [
            {"FirstOffset": f, "LastOffset": last, "AcknowledgeTypes": [t]} for f, last, t in acks]}
        body = {"GroupId": self.group, "MemberId": self.member, "ShareSessionEpoch": self.epoch,
                "MaxWaitMs": wait_ms, "MinBytes": 1, "MaxBytes": 1 << 20, "MaxRecords": max_records,
                "BatchSize": max_records, "ShareAcquireMode": 0,
                "Topics": [{"TopicId": self.topic_id, "Partitions": [partition]}] if self.epoch == 0 or acks else [],
                "ForgottenTopicsData": []}
        resp = request("127.0.0.1", self.broker.port, ApiKey.SHARE_FETCH, body, version=2, timeout_s=10)
        if resp["ErrorCode"] == ErrorCode.NONE:
            self.epoch += 1
        return resp

    def acknowledge(self, acks) -> dict:
        body = {"GroupId": self.group, "MemberId": self.member, "ShareSessionEpoch": self.epoch, "IsRenewAck": False,
                "Topics": [{"TopicId": self.topic_id, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": [
                    {"FirstOffset": f, "LastOffset": last, "AcknowledgeTypes": [t]} for f, last, t in acks]}]}]}
        resp = request("127.0.0.1", self.broker.port, ApiKey.SHARE_ACKNOWLEDGE, body, version=2, timeout_s=10)
        if resp["ErrorCode"] == ErrorCode.NONE:
            self.epoch += 1
        return resp


def acquired(resp: dict) -> list[tuple[int, int, int]]:
    return [(r["FirstOffset"], r["LastOffset"], r["DeliveryCount"])
            for t in resp["Responses"] for p in t["Partitions"] for r in p["AcquiredRecords"]]


def values(resp: dict) -> dict[int, bytes]:
    out = {}
    for t in resp["Responses"]:
        for p in t["Partitions"]:
            for _h, records in decode_batches(p["Records"] or b""):
                out.update({r.offset: r.value for r in records})
    return out


def partition_errors(resp: dict, field: str) -> list[int]:
    return [p[field] for t in resp["Responses"] for p in t["Partitions"]]


def topic_id_of(broker, topic: str) -> bytes:
    def known():
        body = {"Topics": [{"Name": topic, "TopicId": bytes(16)}], "AllowAutoTopicCreation": False,
                "IncludeTopicAuthorizedOperations": False}
        t = request("127.0.0.1", broker.port, ApiKey.METADATA, body, version=12)["Topics"][0]
        return t["TopicId"] if t["ErrorCode"] == 0 else None
    return wait_for(known, 20, f"topic {topic} known")


def fetch_until(member: Member, want, what: str, acks=()) -> dict:
    """Fetch (long-polling 500 ms each) until ``want(response)``."""
    state = {"acks": list(acks)}

    def got():
        resp = member.fetch(acks=state["acks"], wait_ms=500)
        state["acks"] = []
        assert resp["ErrorCode"] == ErrorCode.NONE, resp
        return resp if want(resp) else None
    return wait_for(got, 60, what)


def test_share_fetch_acknowledge_and_lock_expiry(cluster):
    broker = cluster.brokers[0]
    create_topic(cluster.bootstrap, "q", 1)
    topic_id = topic_id_of(broker, "q")
    a = Member(broker, "g", "member-a", topic_id)
    b = Member(broker, "g", "member-b", topic_id)
    # the share-partition starts at the high watermark (share.auto.offset.reset latest): nothing yet
    first = fetch_until(a, lambda r: not partition_errors(r, "ErrorCode") or
                        partition_errors(r, "ErrorCode") == [0], "the share-partition loaded")
    assert acquired(first) == []
    produce_all(cluster.bootstrap, "q", [(0, None, str(i).encode(), None, None) for i in range(10)])
    got = fetch_until(a, acquired, "a acquires the new records")
    assert acquired(got) == [(0, 9, 1)]
    assert values(got) == {i: str(i).encode() for i in range(10)}
    assert got["AcquisitionLockTimeoutMs"] == 1500
    # nothing left for b while a holds everything
    assert acquired(b.fetch()) == []
    resp = a.acknowledge([(0, 4, ACCEPT), (5, 9, RELEASE)])
    assert resp["ErrorCode"] == 0 and partition_errors(resp, "ErrorCode") == [0], resp
    again = fetch_until(b, acquired, "b gets the released records")
    assert acquired(again) == [(5, 9, 2)]
    # b stops acknowledging: its locks expire and a gets them, delivered a third time
    third = fetch_until(a, acquired, "a gets them after b's locks expired")
    assert acquired(third) == [(5, 9, 3)]
    # acknowledging records one does not hold is refused, and changes nothing
    stale = b.acknowledge([(5, 9, ACCEPT)])
    assert partition_errors(stale, "ErrorCode") == [ErrorCode.INVALID_RECORD_STATE], stale
    # a piggy-backs: accept 5-7, reject 8-9; nothing is left to deliver
    done = a.fetch(acks=[(5, 7, ACCEPT), (8, 9, REJECT)])
    assert partition_errors(done, "AcknowledgeErrorCode") == [0] and acquired(done) == [], done
    assert acquired(b.fetch()) == []


def member_holding(cluster, topic: str, group: str, records: int) -> tuple[Member, bytes]:
    """A member of ``group`` on a new one-partition ``topic`` that acquired its first ``records``
    records (produced once its share-partition was loaded), and the topic's id."""
    broker = cluster.brokers[0]
    create_topic(cluster.bootstrap, topic, 1)
    topic_id = topic_id_of(broker, topic)
    member = Member(broker, group, "member-a", topic_id)
    fetch_until(member, lambda r: True, "the share-partition loaded")
    produce_all(cluster.bootstrap, topic, [(0, None, str(i).encode(), None, None) for i in range(records)])
    assert acquired(fetch_until(member, acquired, "acquired")) == [(0, records - 1, 1)]
    return member, topic_id


def test_state_survives_a_broker_restart(cluster):
    broker = cluster.brokers[0]
    a, topic_id = member_holding(cluster, "r", "g2", 6)
    assert a.acknowledge([(0, 2, ACCEPT)])["ErrorCode"] == 0
    # kill -9: offsets 3-5 were acquired, never acknowledged
    assert redelivered_after_kill9(broker, "g2", topic_id) == [(3, 5, 2)]


def redelivered_after_kill9(broker, group: str, topic_id: bytes) -> list[tuple[int, int, int]]:
    """What a new member of ``group`` acquires once the broker is killed -9 and started again."""
    broker.kill9()
    broker.start()
    b = Member(broker, group, "member-b", topic_id)
    return acquired(fetch_until(b, acquired, "the unacknowledged records delivered again"))


def share_state_log_start(broker) -> int:
    """The highest log start offset among the __share_group_state partitions (ListOffsets EARLIEST)."""
    body = {"ReplicaId": -1, "IsolationLevel": 0, "Topics": [{"Name": "__share_group_state", "Partitions": [
        {"PartitionIndex": p, "CurrentLeaderEpoch": -1, "Timestamp": -2} for p in range(3)]}]}
    parts = request("127.0.0.1", broker.port, ApiKey.LIST_OFFSETS, body, version=7)["Topics"][0]["Partitions"]
    assert all(p["ErrorCode"] == ErrorCode.NONE for p in parts), parts
    return max(p["Offset"] for p in parts)


def test_pruned_share_state_survives_a_broker_restart(cluster):
    broker = cluster.brokers[0]
    a, topic_id = member_holding(cluster, "pruned", "g3", 12)
    for i in range(9):      # a write each: a snapshot every third, the records before it redundant
        assert a.acknowledge([(i, i, ACCEPT)])["ErrorCode"] == 0
    wait_for(lambda: share_state_log_start(broker) > 0, 30, "the share coordinator pruned its partition")
    # offsets 9-11 acquired, never acknowledged; the reload reads the pruned partition
    assert redelivered_after_kill9(broker, "g3", topic_id) == [(9, 11, 2)]


def test_read_committed_share_group_skips_aborted_transactions(cluster):
    broker = cluster.brokers[0]
    create_topic(cluster.bootstrap, "t", 1)
    topic_id = topic_id_of(broker, "t")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx-share"})
    producer.init_transactions(30)
    for batch, commit in (([b"a0", b"a1", b"a2"], False), ([b"c0", b"c1"], True)):
        producer.begin_transaction()
        for v in batch:
            producer.produce("t", v, partition=0)
        producer.flush(30)      # written before the abort: an abort drops what is still queued
        producer.commit_transaction(30) if commit else producer.abort_transaction(30)
    alter_group(cluster, "rc", {"share.isolation.level": "read_committed", "share.auto.offset.reset": "earliest"})
    member = Member(broker, "rc", "m", topic_id)
    got = fetch_until(member, acquired, "the committed records")
    # offsets 0-2 aborted, 3 the ABORT marker, 4-5 committed, 6 the COMMIT marker: only 4-5 are handed out
    assert acquired(got) == [(4, 5, 1)] and set(values(got).values()) == {b"c0", b"c1"}
    done = member.fetch(acks=[(4, 5, ACCEPT)], wait_ms=200)
    assert partition_errors(done, "AcknowledgeErrorCode") == [0] and acquired(done) == []


def test_a_group_starts_by_duration(cluster):
    """share.auto.offset.reset=by_duration:PT1H (KIP-1106): a new share-partition starts at the first
    record at most an hour old; PT0S finds none that young and starts at the high watermark."""
    broker = cluster.brokers[0]
    create_topic(cluster.bootstrap, "d", 1)
    topic_id = topic_id_of(broker, "d")
    produce_all(cluster.bootstrap, "d", [(0, None, str(i).encode(), None, None) for i in range(3)])
    alter_group(cluster, "hour", {"share.auto.offset.reset": "by_duration:PT1H"})
    alter_group(cluster, "now", {"share.auto.offset.reset": "by_duration:PT0S"})
    assert acquired(fetch_until(Member(broker, "hour", "m", topic_id), acquired, "the last hour's records")) == \
        [(0, 2, 1)]
    now = Member(broker, "now", "m", topic_id)
    assert acquired(fetch_until(now, lambda r: True, "loaded")) == []
    produce_all(cluster.bootstrap, "d", [(0, None, b"3", None, None)])
    assert acquired(fetch_until(now, acquired, "the new record")) == [(3, 3, 1)]


def alter_group(cluster, group: str, values: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in values.items()])
    admin.incremental_alter_configs([res])[res].result(timeout=30)


def test_idle_sessions_are_dropped_and_free_their_slots(cluster):
    """group.share.max.share.sessions (2 here): a third member is refused while two sessions are
    open; sessions unused for group.share.max.session.timeout.ms (3 s here) are dropped."""
    broker = cluster.brokers[0]
    create_topic(cluster.bootstrap, "s", 1)
    topic_id = topic_id_of(broker, "s")
    for name in ("gone-1", "gone-2"):
        assert Member(broker, "idle", name, topic_id).fetch()["ErrorCode"] == 0
    third = Member(broker, "idle", "third", topic_id)
    assert third.fetch()["ErrorCode"] == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    wait_for(lambda: third.fetch()["ErrorCode"] == 0, 30, "the idle sessions dropped")
