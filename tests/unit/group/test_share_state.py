"""The share coordinator's records (``group/share_state_records.py``) and rules
(``group/share_state.py``): layouts, fencing, snapshots every N updates, deletes, and a shard
rebuilt from its records equal to the live one."""
import pytest

from tierlog.group.share_partition import AcknowledgeType, SharePartition, SharePartitionConfig
from tierlog.group.share_state import MAX_IN_FLIGHT_OFFSETS, ShareStateShard
from tierlog.group.share_state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    SharePartitionKey,
    decode_key,
    decode_value,
    encode_record,
)
from tierlog.protocol.errors import ErrorCode

KEY = SharePartitionKey("g", bytes(range(16)), 3)
BATCH = {"FirstOffset": 5, "LastOffset": 7, "DeliveryState": 2, "DeliveryCount": 1}


def test_records_round_trip_with_kafka_layout():
    kbytes, vbytes = encode_record(SHARE_UPDATE, KEY, {"SnapshotEpoch": 0, "LeaderEpoch": 2, "StartOffset": -1,
                                                       "StateBatches": [BATCH]})
    assert kbytes[:2] == b"\x00\x01" and vbytes[:2] == b"\x00\x00"      # type 1, value version 0
    assert decode_key(kbytes) == (SHARE_UPDATE, KEY)
    value = decode_value(SHARE_UPDATE, vbytes)
    assert value["StateBatches"] == [BATCH] and value["DeliveryCompleteCount"] == -1
    kbytes, vbytes = encode_record(SHARE_SNAPSHOT, KEY, None)
    assert decode_key(kbytes) == (SHARE_SNAPSHOT, KEY) and decode_value(SHARE_SNAPSHOT, vbytes) is None


def test_unknown_key_type_is_skipped_and_unknown_value_version_refused():
    kbytes, vbytes = encode_record(SHARE_SNAPSHOT, KEY, None)
    assert decode_key(b"\x00\x07" + kbytes[2:]) is None
    with pytest.raises(ValueError):
        decode_value(SHARE_UPDATE, b"\x00\x05\x00")
    with pytest.raises(ValueError):
        decode_key(b"\x00")


def initialized(per_snapshot=500):
    shard = ShareStateShard(per_snapshot)
    assert shard.initialize(KEY, 0, 0, 1000)[0] == ErrorCode.NONE
    return shard


def replayed(shard, records, per_snapshot=500):
    copy = ShareStateShard(per_snapshot)
    for offset, (k, v) in enumerate(records):
        copy.replay(k, v, offset)
    return copy


def test_uninitialized_share_partition_answers_unknown():
    shard = ShareStateShard()
    assert shard.read(KEY, 0)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert shard.write(KEY, 0, 0, 0, [], 1)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert shard.read_summary(KEY)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert shard.delete(KEY) == (ErrorCode.NONE, [])


def test_writes_merge_into_what_read_answers():
    shard = initialized()
    assert shard.write(KEY, 0, 1, -1, [{**BATCH, "DeliveryState": 0}], 2000)[0] == ErrorCode.NONE
    assert shard.write(KEY, 0, 1, -1, [{**BATCH, "FirstOffset": 6, "LastOffset": 6}], 2001)[0] == ErrorCode.NONE
    error, state, records = shard.read(KEY, 1)
    assert error == ErrorCode.NONE and records == []
    assert state == {"StateEpoch": 0, "StartOffset": 0, "StateBatches": [
        {"FirstOffset": 0, "LastOffset": 4, "DeliveryState": 0, "DeliveryCount": 0},     # never delivered
        {"FirstOffset": 5, "LastOffset": 5, "DeliveryState": 0, "DeliveryCount": 1},
        {"FirstOffset": 6, "LastOffset": 6, "DeliveryState": 2, "DeliveryCount": 1},
        {"FirstOffset": 7, "LastOffset": 7, "DeliveryState": 0, "DeliveryCount": 1}]}
    assert shard.write(KEY, 0, 1, 8, [], 2002)[0] == ErrorCode.NONE        # the start moved past them
    assert shard.write(KEY, 0, 1, -1, [{**BATCH, "FirstOffset": 0, "LastOffset": 9}], 2003)[0] == ErrorCode.NONE
    assert shard.read(KEY, 1)[1] == {"StateEpoch": 0, "StartOffset": 10, "StateBatches": []}
    assert shard.read_summary(KEY) == (ErrorCode.NONE, {"StateEpoch": 0, "LeaderEpoch": 1, "StartOffset": 8})
    assert shard.write(KEY, 0, 1, -1, [{**BATCH, "FirstOffset": 12, "LastOffset": 12}], 2004)[0] == ErrorCode.NONE
    assert shard.read(KEY, 1)[1]["StateBatches"] == [        # 10 and 11: in no batch, never delivered
        {"FirstOffset": 10, "LastOffset": 11, "DeliveryState": 0, "DeliveryCount": 0},
        {"FirstOffset": 12, "LastOffset": 12, "DeliveryState": 2, "DeliveryCount": 1}]


def test_a_newer_leader_fences_the_older_one():
    shard = initialized()
    assert shard.write(KEY, 0, 3, -1, [BATCH], 2000)[0] == ErrorCode.NONE
    assert shard.read(KEY, 2)[0] == ErrorCode.FENCED_LEADER_EPOCH
    error, _state, records = shard.read(KEY, 5)         # the new leader's read records its epoch
    assert error == ErrorCode.NONE and len(records) == 1
    assert shard.write(KEY, 0, 3, -1, [BATCH], 2001)[0] == ErrorCode.FENCED_LEADER_EPOCH
    assert shard.write(KEY, 0, 5, -1, [BATCH], 2002)[0] == ErrorCode.NONE


def test_state_epoch_fences_writes_and_initialize():
    shard = ShareStateShard()
    shard.initialize(KEY, 2, 10, 1000)
    assert shard.write(KEY, 1, 0, -1, [], 2000)[0] == ErrorCode.FENCED_STATE_EPOCH
    assert shard.initialize(KEY, 1, 0, 2000)[0] == ErrorCode.FENCED_STATE_EPOCH
    assert shard.initialize(KEY, 3, 20, 2000)[0] == ErrorCode.NONE          # alter offsets: a new epoch
    assert shard.read(KEY, 0)[1] == {"StateEpoch": 3, "StartOffset": 20, "StateBatches": []}


def test_a_batch_the_log_cannot_hold_is_refused():
    shard = initialized()
    for bad in ({**BATCH, "DeliveryState": 1}, {**BATCH, "LastOffset": 4}, {**BATCH, "DeliveryCount": -1},
                {**BATCH, "LastOffset": MAX_IN_FLIGHT_OFFSETS}):
        assert shard.write(KEY, 0, 0, -1, [bad], 2000) == (ErrorCode.INVALID_REQUEST, [])


def test_every_nth_write_is_a_merged_snapshot():
    shard = initialized(per_snapshot=3)
    types = []
    for i in range(7):
        _e, records = shard.write(KEY, 0, 0, -1, [{**BATCH, "FirstOffset": i, "LastOffset": i}], 2000 + i)
        types += [decode_key(k)[0] for k, _v in records]
    assert types == [SHARE_UPDATE, SHARE_UPDATE, SHARE_SNAPSHOT] * 2 + [SHARE_UPDATE]
    assert shard.read(KEY, 0)[1]["StartOffset"] == 7        # every offset below 7 acknowledged


def test_delete_writes_tombstones_and_forgets():
    shard = initialized()
    error, records = shard.delete(KEY)
    assert error == ErrorCode.NONE and [v for _k, v in records] == [None, None]
    assert shard.read(KEY, 0)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_leader_reloads_from_the_shard_rebuilt_from_its_log():
    """A share-partition's leader writes take_update after acquiring and acknowledging; a shard
    rebuilt from the records answers a state from which a new leader redelivers only what was not
    acknowledged, with its delivery count."""
    config = SharePartitionConfig(record_lock_duration_ms=1000, delivery_count_limit=3)
    log = []
    shard = ShareStateShard(per_snapshot := 2)
    log += shard.initialize(KEY, 0, 0, 0)[1]
    leader = SharePartition(config, leader_epoch=1)
    for offsets in ((0, 3), (4, 5)):
        leader.acquire("m", 6, offsets[1] - offsets[0] + 1, 10)
    leader.acknowledge("m", [(0, 1, [AcknowledgeType.ACCEPT]), (2, 2, [AcknowledgeType.REJECT]),
                             (3, 3, [AcknowledgeType.RELEASE]), (5, 5, [AcknowledgeType.ACCEPT])], 20)
    for _ in range(3):          # the same update again is harmless; it crosses a snapshot
        update = leader.take_update() or {"StartOffset": -1, "StateBatches": []}
        error, records = shard.write(KEY, 0, 1, update["StartOffset"], update["StateBatches"], 30)
        assert error == ErrorCode.NONE
        log += records
    rebuilt = replayed(shard, log, per_snapshot)
    assert rebuilt.read(KEY, 2)[1] == shard.read(KEY, 2)[1]
    state = rebuilt.read(KEY, 2)[1]
    snapshot = {"SnapshotEpoch": 0, "LeaderEpoch": 2, **state}
    follower = SharePartition.from_persisted(config, snapshot)
    assert follower.start_offset == 3
    redelivered = follower.acquire("n", 6, 10, 40)
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in redelivered] == [(3, 4, 2)]


def _write(shard, key, log, start=-1):
    error, records = shard.write(key, 0, 0, start, [], 1)
    assert error == ErrorCode.NONE
    log += records


def test_prune_offset_is_the_least_latest_snapshot_offset():
    other = SharePartitionKey("g2", bytes(16), 0)
    shard = ShareStateShard(2)
    log = []
    for key in (KEY, other):
        log += shard.initialize(key, 0, 0, 1)[1]           # snapshots at 0 and 1
    assert shard.prune_offset() == 0
    _write(shard, KEY, log)                                 # update at 2
    _write(shard, KEY, log)                                 # snapshot at 3 (2 updates per snapshot)
    assert shard.prune_offset() == 1                        # the other key's snapshot holds it
    _write(shard, other, log)
    _write(shard, other, log)                               # its snapshot at 5
    assert shard.prune_offset() == 3
    _write(shard, KEY, log)                                 # an update after KEY's snapshot keeps it
    assert shard.prune_offset() == 3
    pruned = ShareStateShard(2)                             # a reload of what is left equals the live state
    for offset in range(shard.prune_offset(), len(log)):
        pruned.replay(*log[offset], offset)
    for key in (KEY, other):
        assert pruned.read(key, 0)[1] == shard.read(key, 0)[1]
    assert pruned.prune_offset() == shard.prune_offset()


def test_a_deleted_share_partition_holds_nothing_back():
    shard = ShareStateShard()
    log = list(shard.initialize(KEY, 0, 0, 1)[1])
    log += shard.delete(KEY)[1]
    assert shard.prune_offset() == len(log) == 3            # the tombstones are the last records
    log += shard.initialize(KEY, 1, 0, 1)[1]
    assert shard.prune_offset() == 3
    shard.log_end_offset = 10                               # other writes ended the log further on
    assert shard.initialize(KEY, 2, 0, 1)[0] == ErrorCode.NONE
    assert shard.prune_offset() == 10
