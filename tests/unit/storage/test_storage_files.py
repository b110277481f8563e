"""Config table, checkpoint files, partition.metadata, epoch cache, indexes."""

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tierlog.storage import (
    TOPIC_CONFIGS,
    CorruptCheckpointError,
    CorruptIndexError,
    LeaderEpochCache,
    LogConfig,
)
from tierlog.storage.checkpoint import (
    read_epoch_entries,
    read_offsets,
    write_epoch_entries,
    write_offsets,
)
from tierlog.storage.index import OffsetIndex, TimeIndex
from tierlog.storage.log_config import LONG_MAX
from tierlog.storage.partition_metadata import (
    read_topic_id,
    topic_id_from_str,
    topic_id_to_str,
    write_topic_id,
)

# --- LogConfig -----------------------------------------------------------------------------------


def test_kafka_defaults():
    config = LogConfig()
    assert config.segment_bytes == 1024**3
    assert config.segment_ms == 7 * 24 * 3600 * 1000
    assert config.segment_index_bytes == 10 * 1024 * 1024
    assert config.retention_ms == 7 * 24 * 3600 * 1000 and config.retention_bytes == -1
    assert config.index_interval_bytes == 4096
    assert config.flush_messages == LONG_MAX and config.flush_ms == LONG_MAX
    assert config.message_timestamp_type == "CreateTime" and not config.log_append_time
    assert config.max_message_bytes == 1048588
    assert config.file_delete_delay_ms == 60000
    assert config.cleanup_policy == ("delete",) and config.delete_enabled
    assert config.message_timestamp_before_max_ms == LONG_MAX
    assert config.message_timestamp_after_max_ms == 3600000
    assert config.local_retention_ms == config.retention_ms


def test_from_props_parses_and_names_bad_keys():
    config = LogConfig.from_props({"retention.ms": "-1", "cleanup.policy": "compact, delete",
                                   "message.timestamp.type": "LogAppendTime", "preallocate": "TRUE"})
    assert config.retention_ms == -1 and config.cleanup_policy == ("compact", "delete")
    assert config.log_append_time and config.values["preallocate"] is True
    assert config.overrides == {"retention.ms", "cleanup.policy", "message.timestamp.type", "preallocate"}
    for props, key in [({"segment.bytes": "1000"}, "segment.bytes"), ({"retention.ms": "abc"}, "retention.ms"),
                       ({"no.such.config": "1"}, "no.such.config"), ({"cleanup.policy": "bogus"}, "cleanup.policy"),
                       ({"max.message.bytes": str(2**31)}, "max.message.bytes"),
                       ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "min.compaction.lag.ms"),
                       ({"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "2000"},
                        "local.retention.ms")]:
        with pytest.raises(ValueError, match=key.replace(".", r"\.")):
            LogConfig.from_props(props)


def test_overrides_and_table():
    config = LogConfig.from_props({"retention.bytes": "100", "segment.ms": "5000"})
    assert config.retention_bytes == 100 and config.segment_ms == 5000
    assert config.overrides == {"retention.bytes", "segment.ms"}
    assert TOPIC_CONFIGS["retention.ms"].synonym == "log.retention.ms"
    assert TOPIC_CONFIGS["segment.bytes"].type == "int" and TOPIC_CONFIGS["retention.ms"].type == "long"
    assert LogConfig.from_props({"internal.segment.bytes": "4096"}).segment_bytes == 4096


# --- checkpoint files -------------------------------------------------------------------------------


def test_offset_checkpoint_format(tmp_path: Path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offsets(path, {("orders", 1): 42, ("a-b", 0): 7})
    assert path.read_text() == "0\n2\na-b 0 7\norders 1 42\n"
    assert read_offsets(path) == {("orders", 1): 42, ("a-b", 0): 7}
    assert read_offsets(tmp_path / "missing") == {}
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("text", ["1\n0\n", "0\n2\nx 0 1\n", "0\n1\nx y 1\n", "0\nz\n", ""])
def test_corrupt_checkpoints_are_detected(tmp_path: Path, text):
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError):
        read_offsets(path)


def test_epoch_checkpoint_format(tmp_path: Path):
    path = tmp_path / "leader-epoch-checkpoint"
    write_epoch_entries(path, [(0, 0), (3, 250)])
    assert path.read_text() == "0\n2\n0 0\n3 250\n"
    assert read_epoch_entries(path) == [(0, 0), (3, 250)]


def test_partition_metadata_round_trip(tmp_path: Path):
    topic_id = bytes(range(16))
    write_topic_id(tmp_path, topic_id)
    assert (tmp_path / "partition.metadata").read_text() == "version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw"
    assert read_topic_id(tmp_path) == topic_id
    assert topic_id_from_str(topic_id_to_str(b"\xff" * 16)) == b"\xff" * 16
    assert read_topic_id(tmp_path / "nothing-here") is None
    (tmp_path / "partition.metadata").write_text("version: 1\ntopic_id: AAECAwQFBgcICQoLDA0ODw")
    with pytest.raises(CorruptCheckpointError):
        read_topic_id(tmp_path)


# --- leader epoch cache -----------------------------------------------------------------------------


def test_epoch_cache_assign_and_persist(tmp_path: Path):
    cache = LeaderEpochCache(tmp_path)
    assert cache.assign(1, 0) and cache.assign(2, 10) and cache.assign(4, 25)
    assert not cache.assign(4, 30)  # same epoch, later offset: no change
    assert LeaderEpochCache.load(tmp_path).entries() == [(1, 0), (2, 10), (4, 25)]
    assert cache.assign(3, 20)  # a lower epoch wins from its offset on: later entries go
    assert cache.entries() == [(1, 0), (2, 10), (3, 20)]
    assert cache.assign(5, 5)  # start below existing starts drops them
    assert cache.entries() == [(1, 0), (5, 5)]
    with pytest.raises(ValueError):
        cache.assign(-1, 0)


def test_epoch_cache_end_offsets(tmp_path: Path):
    cache = LeaderEpochCache(tmp_path, [(2, 10), (4, 30), (6, 50)])
    assert cache.end_offset_for(6, 77) == (6, 77)
    assert cache.end_offset_for(4, 77) == (4, 50)
    assert cache.end_offset_for(5, 77) == (4, 50)
    assert cache.end_offset_for(3, 77) == (2, 30)
    assert cache.end_offset_for(1, 77) == (1, 10)
    assert cache.end_offset_for(7, 77) == (-1, -1)
    assert cache.end_offset_for(-1, 77) == (-1, -1)
    assert LeaderEpochCache(tmp_path).end_offset_for(0, 5) == (-1, -1)
    assert cache.epoch_for_offset(35) == 4 and cache.epoch_for_offset(9) is None
    assert cache.entries_in_range(35, 55) == [(4, 35), (6, 50)]


def test_epoch_cache_truncation(tmp_path: Path):
    cache = LeaderEpochCache(tmp_path, [(2, 10), (4, 30), (6, 50)])
    assert cache.truncate_from_end(30)
    assert cache.entries() == [(2, 10)]
    assert not cache.truncate_from_end(30)
    cache = LeaderEpochCache(tmp_path, [(2, 10), (4, 30), (6, 50)])
    assert cache.truncate_from_start(40)
    assert cache.entries() == [(4, 40), (6, 50)]
    assert not cache.truncate_from_start(5)
    assert LeaderEpochCache.load(tmp_path).entries() == [(4, 40), (6, 50)]


# --- indexes ----------------------------------------------------------------------------------------


def test_a_deferred_epoch_write_taken_before_a_truncation_does_not_undo_it(tmp_path: Path):
    cache = LeaderEpochCache(tmp_path, [(1, 0)])
    cache.flush()
    cache.defer_additions = True
    cache.assign_leader_epoch(2, 10)             # waits for the log's next flush
    taken = cache.take_unwritten()               # the flush plan, taken under the log's lock
    cache.truncate_from_end(10)                  # the event loop truncates meanwhile (written through)
    taken.write()                                # then the writer thread runs the plan
    assert LeaderEpochCache.load(tmp_path).entries() == [(1, 0)]
    assert not list(tmp_path.glob("*.tmp"))


def test_epoch_cache_rebuilt_from_an_uploaded_checkpoint(tmp_path: Path):
    """KIP-405 / KIP-1023: entries below the local start, the first moved up to the log start."""
    cache = LeaderEpochCache(tmp_path, [(9, 0), (10, 3)])
    cache.rebuild_from_remote([(1, 0), (2, 10), (4, 30), (6, 50)], 15, 40)
    assert cache.entries() == [(2, 15), (4, 30)]
    assert LeaderEpochCache.load(tmp_path).entries() == [(2, 15), (4, 30)]
    cache.rebuild_from_remote([(1, 0), (2, 10)], 0, 10)
    assert cache.entries() == [(1, 0)]
    cache.rebuild_from_remote([(3, 20)], 5, 30)      # the log start before the first entry: kept as it is
    assert cache.entries() == [(3, 20)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=50), min_size=0, max_size=40), st.integers(0, 3000))
def test_offset_index_lookup_matches_brute_force(tmp_path_factory, gaps, target):
    path = tmp_path_factory.mktemp("idx") / "00000000000000001000.index"
    path.touch()
    index = OffsetIndex(path, 1000, 1 << 20, loaded=True)
    entries, offset, position = [], 1000, 0
    for gap in gaps:
        offset += gap
        position += gap * 10
        index.append(offset, position)
        entries.append((offset, position))
    below = [e for e in entries if e[0] <= 1000 + target]
    assert index.lookup(1000 + target) == (below[-1] if below else (1000, 0))
    index.write_pending(sync=True)
    reloaded = OffsetIndex(path, 1000, 1 << 20, loaded=False)
    assert reloaded.lookup(1000 + target) == index.lookup(1000 + target)
    assert os.path.getsize(path) == 8 * len(entries)


def test_offset_index_truncate_full_and_sanity(tmp_path: Path):
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0, 8 * 4, loaded=True)
    for i in range(4):
        index.append(i * 10, i * 100)
    assert index.is_full
    index.write_pending(sync=False)
    index.truncate_to(20)
    assert len(index) == 2 and os.path.getsize(path) == 16
    assert index.floor_position(250) == 100
    path.write_bytes(path.read_bytes() + b"\x00\x00\x00")
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0, 1 << 20, loaded=False).ensure_loaded()
    path.write_bytes(bytes.fromhex("0000000500000010" "0000000300000020"))
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0, 1 << 20, loaded=False).ensure_loaded()


def test_time_index(tmp_path: Path):
    path = tmp_path / "00000000000000000100.timeindex"
    index = TimeIndex(path, 100, 1 << 20, loaded=True)
    index.maybe_append(-1, 100)  # no timestamp: nothing
    index.maybe_append(500, 105)
    index.maybe_append(400, 110)  # not larger: skipped
    index.maybe_append(900, 120)
    assert len(index) == 2
    assert index.lookup(499) == (-1, 100)
    assert index.lookup(700) == (500, 105)
    assert index.last_entry() == (900, 120)
    index.write_pending(sync=True)
    assert path.read_bytes() == bytes.fromhex("00000000000001f400000005" "000000000000038400000014")
    reloaded = TimeIndex(path, 100, 1 << 20, loaded=False)
    assert reloaded.last_entry() == (900, 120)
    reloaded.truncate_to(120)
    assert reloaded.last_entry() == (500, 105) and os.path.getsize(path) == 12
