"""KIP-858 on the controller: replica -> dir assignments and a partial log dir failure."""
from controller_helpers import Harness, heartbeat, registration

from tierlog.metadata.cluster_records import (
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    decode,
    encode,
)
from tierlog.metadata.directories import (
    LOST,
    MIGRATING,
    UNASSIGNED,
    is_online,
    is_reserved,
)
from tierlog.metadata.snapshot import partition_record
from tierlog.protocol.errors import ErrorCode

DIR_A, DIR_B, DIR_C = b"\x0a" * 16, b"\x0b" * 16, b"\x0c" * 16
ONE_DIR = {1: [DIR_C], 3: [b"\x0d" * 16]}


def _start(h: Harness, dirs: dict[int, list[bytes]]):
    for b, ds in sorted(dirs.items()):
        req = registration(b)
        req["LogDirs"] = list(ds)
        h.epochs[b] = h.call(62, 3, req).response["BrokerEpoch"]
    for b in sorted(dirs):
        assert h.heartbeat(b).response["IsFenced"] is False


def _assign(h, broker, dir_id, topic_id, partitions, epoch=None):
    req = {"BrokerId": broker, "BrokerEpoch": h.epochs[broker] if epoch is None else epoch,
           "Directories": [{"Id": dir_id, "Topics": [{"TopicId": topic_id,
                                                      "Partitions": [{"PartitionIndex": p} for p in partitions]}]}]}
    return h.call(73, 0, req)


def _hb_offline(h, broker, offline):
    req = heartbeat(broker, h.epochs[broker], h.qc.next_offset - 1)
    req["OfflineLogDirs"] = list(offline)
    return h.call(63, 1, req)


def _topic(h, name="t", partitions=4):
    req = {"Topics": [{"Name": name, "NumPartitions": -1, "ReplicationFactor": -1, "Configs": [],
                       "Assignments": [{"PartitionIndex": i, "BrokerIds": [2, 1, 3] if i % 2 == 0 else [1, 2, 3]}
                                       for i in range(partitions)]}],
           "timeoutMs": 1000, "validateOnly": False}
    assert h.call(19, 7, req).response["Topics"][0]["ErrorCode"] == 0
    return h.qc.image.topics[name]


def test_reserved_ids_and_online_rule():
    assert is_reserved(MIGRATING) and is_reserved(UNASSIGNED) and is_reserved(LOST)
    assert not is_reserved(DIR_A)
    assert is_online(UNASSIGNED, (DIR_A,)) and is_online(MIGRATING, (DIR_A,)) and not is_online(LOST, (DIR_A,))
    assert is_online(DIR_A, (DIR_A, DIR_B)) and not is_online(DIR_C, (DIR_A, DIR_B))
    assert is_online(DIR_C, ())         # a broker that registered no dirs (pre-KIP-858)


def test_new_replicas_get_the_default_dir_of_their_broker():
    h = Harness()
    _start(h, {1: [DIR_C], 2: [DIR_A, DIR_B], 3: []})
    t = _topic(h, partitions=2)
    # replicas [2, 1, 3]: several dirs -> UNASSIGNED, one dir -> that dir, none -> MIGRATING
    assert t.partitions[0].directories == (UNASSIGNED, DIR_C, MIGRATING)
    assert t.partitions[1].directories == (DIR_C, UNASSIGNED, MIGRATING)


def test_assign_replicas_to_dirs_records_the_dir_and_checks_the_request():
    h = Harness()
    _start(h, {**ONE_DIR, 2: [DIR_A, DIR_B]})
    t = _topic(h)
    r = _assign(h, 2, DIR_A, t.topic_id, [0, 1])
    assert [p["ErrorCode"] for p in r.response["Directories"][0]["Topics"][0]["Partitions"]] == [0, 0]
    assert r.records == [PartitionChangeRecord(0, t.topic_id, directories=(DIR_A, DIR_C, b"\x0d" * 16)),
                         PartitionChangeRecord(1, t.topic_id, directories=(DIR_C, DIR_A, b"\x0d" * 16))]
    assert h.qc.image.topics["t"].partitions[0].directory(2) == DIR_A
    assert _assign(h, 2, DIR_A, t.topic_id, [0]).records == []           # already so
    codes = _assign(h, 2, DIR_A, t.topic_id, [9]).response["Directories"][0]["Topics"][0]["Partitions"]
    assert codes == [{"PartitionIndex": 9, "ErrorCode": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}]
    codes = _assign(h, 2, DIR_A, b"\x01" * 16, [0]).response["Directories"][0]["Topics"][0]["Partitions"]
    assert codes[0]["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_ID
    assert _assign(h, 2, DIR_A, t.topic_id, [0], epoch=12345).response["ErrorCode"] == ErrorCode.STALE_BROKER_EPOCH
    h.call(64, 0, {"BrokerId": 3})
    assert _assign(h, 3, DIR_A, t.topic_id, [0]).response["ErrorCode"] == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_a_partial_dir_failure_moves_exactly_the_replicas_on_that_dir():
    h = Harness()
    _start(h, {**ONE_DIR, 2: [DIR_A, DIR_B]})
    t = _topic(h)
    _assign(h, 2, DIR_A, t.topic_id, [0, 1])        # p0 led by 2, p1 followed by 2: on the failing dir
    _assign(h, 2, DIR_B, t.topic_id, [2, 3])        # p2 led by 2, p3 followed by 2: on the healthy dir
    r = _hb_offline(h, 2, [DIR_A])
    assert not r.response["IsFenced"]
    assert isinstance(r.records[-1], BrokerRegistrationChangeRecord) and r.records[-1].log_dirs == (DIR_B,)
    parts = h.qc.image.topics["t"].partitions
    assert (parts[0].leader, parts[0].isr) == (1, (1, 3))       # leadership moved to an in-sync replica
    assert parts[0].leader_epoch == 1
    assert (parts[1].leader, parts[1].isr) == (1, (1, 3))       # follower left the ISR
    assert (parts[2].leader, parts[2].isr) == (2, (2, 1, 3))    # the healthy dir keeps leading
    assert (parts[3].leader, parts[3].isr) == (1, (1, 2, 3))
    assert _hb_offline(h, 2, [DIR_A]).records == []             # reported once
    # a replica never elected while its dir is offline: fence the others, p0 stays leaderless
    h.heartbeat(1, want_fence=True)
    h.heartbeat(3, want_fence=True)
    assert h.qc.image.topics["t"].partitions[0].leader == -1
    assert h.qc.image.topics["t"].partitions[2].leader == 2


def test_an_assignment_to_an_offline_dir_takes_the_replica_offline():
    h = Harness()
    _start(h, {**ONE_DIR, 2: [DIR_A, DIR_B]})
    t = _topic(h, partitions=2)                      # p0 led by 2, still UNASSIGNED
    _hb_offline(h, 2, [DIR_A])
    assert h.qc.image.topics["t"].partitions[0].leader == 2     # not known to be there yet
    r = _assign(h, 2, DIR_A, t.topic_id, [0])
    assert len(r.records) == 1 and r.records[0].directories[0] == DIR_A
    p0 = h.qc.image.topics["t"].partitions[0]
    assert (p0.leader, p0.isr) == (1, (1, 3))


def test_directories_survive_a_snapshot_and_the_record_codec():
    h = Harness()
    _start(h, {**ONE_DIR, 2: [DIR_A, DIR_B]})
    t = _topic(h, partitions=1)
    _assign(h, 2, DIR_B, t.topic_id, [0])
    p = h.qc.image.topics["t"].partitions[0]
    rec = decode(encode(partition_record(t.topic_id, p)))
    assert rec.directories == (DIR_B, DIR_C, b"\x0d" * 16)
    # a reassignment keeps the kept replicas' dirs and gives a new one its default
    req = {"TimeoutMs": 1000, "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "Replicas": [2, 1]}]}]}
    r = h.call(45, 0, req)
    assert r.response["ErrorCode"] == 0 and r.records
    p = h.qc.image.topics["t"].partitions[0]
    assert p.directory(2) == DIR_B and len(p.directories) == len(p.replicas)


def test_after_a_restart_without_the_failed_dir_the_replica_is_offline_until_reassigned():
    h = Harness()
    _start(h, {**ONE_DIR, 2: [DIR_A, DIR_B]})
    t = _topic(h, partitions=1)
    _assign(h, 2, DIR_A, t.topic_id, [0])
    _hb_offline(h, 2, [DIR_A])
    assert h.qc.image.topics["t"].partitions[0].leader == 1
    h.heartbeat(2, want_fence=True)                 # stopped...
    req = registration(2, n=1)                      # ...and restarted with only its healthy dir
    req["LogDirs"] = [DIR_B]
    h.epochs[2] = h.call(62, 3, req).response["BrokerEpoch"]
    assert h.heartbeat(2).response["IsFenced"] is False
    h.heartbeat(1, want_fence=True)
    h.heartbeat(3, want_fence=True)                 # broker 2 is the only usable replica left
    assert h.qc.image.topics["t"].partitions[0].leader == -1      # its replica is still on DIR_A
    h.heartbeat(3)                                  # the last ISR member (now in the ELR, KIP-966) is back
    assert h.qc.image.topics["t"].partitions[0].leader == 3
    _assign(h, 2, DIR_B, t.topic_id, [0])           # it recreated the log in its healthy dir
    p0 = h.qc.image.topics["t"].partitions[0]
    assert p0.directory(2) == DIR_B and 2 not in h.qc.image.topics["t"].partitions[0].isr
