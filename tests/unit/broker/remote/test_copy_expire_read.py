"""The RemoteLogManager's passes and the RemoteReader over real logs and a real directory store.

The remote log metadata manager is replaced by an in-memory one that applies a
published record at once (the interface the passes use: assign, is_ready,
cache, publish, add_listener); everything else is the production code.
"""
import asyncio
import itertools
import os
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import replace

import pytest
from leaders import lead
from storage_helpers import NOW, batch, config, read_all

from tierlog.broker.partition import Partition
from tierlog.broker.remote.copy_task import TaskContext, copy_pass, metadata_update
from tierlog.broker.remote.expiration_task import expiration_pass
from tierlog.broker.remote.follower_state import build_remote_log_aux_state
from tierlog.broker.remote.rate_limit import UNLIMITED, ByteRateLimit
from tierlog.broker.remote.reader import RemoteReader
from tierlog.broker.remote.remote_log_manager import RemoteLogManager
from tierlog.config import NodeConfig
from tierlog.protocol.errors import ErrorCode
from tierlog.records.control import build_marker
from tierlog.records.decoder import iter_batches
from tierlog.storage import Log
from tierlog.storage.txn_index import AbortedTxn
from tierlog.tiered import (
    EncryptionSettings,
    FsObjectStore,
    IndexType,
    KeyRing,
    LogSegmentData,
    RemoteLogMetadataCache,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemoteSegmentStore,
    RemoteStorageError,
    TopicIdPartition,
    list_partitions,
)

S = RemoteLogSegmentState
TOPIC_ID = bytes(range(16))
TIP = TopicIdPartition(TOPIC_ID, "t", 0)


class InMemoryMetadata:
    def __init__(self):
        self.caches, self.failing = {}, False

    def assign(self, tip):
        self.caches.setdefault(tip, RemoteLogMetadataCache(tip))

    def unassign(self, tip):
        self.caches.pop(tip, None)

    def is_ready(self, tip):
        return tip in self.caches

    def cache(self, tip):
        return self.caches.get(tip)

    def add_listener(self, fn):
        pass

    async def publish(self, record):
        if self.failing:
            raise RemoteStorageError("metadata topic unreachable")
        tip = getattr(record, "topic_id_partition", None) or record.segment_id.topic_id_partition
        self.caches[tip].apply(record)


class StartedExecutor(Executor):
    """A pool whose worker has picked up every job at once (it cannot be cancelled) but runs it only
    when the test says so: the order of a worker's writes and the loop's steps is the test's."""

    def __init__(self):
        self.jobs = []

    def submit(self, fn, /, *args, **kwargs):
        future = Future()
        future.set_running_or_notify_cancel()
        self.jobs.append((future, fn, args, kwargs))
        return future

    def run_all(self) -> None:
        while self.jobs:
            future, fn, args, kwargs = self.jobs.pop(0)
            try:
                future.set_result(fn(*args, **kwargs))
            except RemoteStorageError as e:
                future.set_exception(e)


async def _settle(steps: int = 50) -> None:
    for _ in range(steps):
        await asyncio.sleep(0)


class FailingStore(FsObjectStore):
    def put_file(self, key, path):
        raise RemoteStorageError("connection refused")


def _partition(tmp_path, **props) -> Partition:
    cfg = config(**{"internal_segment_bytes": 2000, "remote_storage_enable": "true", **props})
    log = Log.open(tmp_path / "t-0", cfg, NOW)
    log.assign_epoch_start_offset(0, 0)
    for seq in range(0, 120, 3):
        log.append(batch(3, producer_id=7, producer_epoch=0, base_sequence=seq), 0, NOW)
    return Partition("t", 0, TOPIC_ID, log, leader_id=1, leader_epoch=0)


def _ctx(store, metadata) -> TaskContext:
    pool = ThreadPoolExecutor(2)
    return TaskContext(1, RemoteSegmentStore(store), metadata, pool, pool, ByteRateLimit(UNLIMITED, 0.0),
                       lambda: NOW)


def _copy(ctx, part) -> int:
    ctx.metadata.assign(TIP)
    return asyncio.run(copy_pass(ctx, TIP, part, lambda: True))


def test_rolled_segments_are_uploaded_in_order_and_describe_themselves(tmp_path):
    part, metadata = _partition(tmp_path), InMemoryMetadata()
    ctx = _ctx(FsObjectStore(tmp_path / "remote"), metadata)
    rolled = part.log.rolled_segments()
    assert _copy(ctx, part) == len(rolled) > 2
    assert part.log.highest_offset_in_remote_storage.value == rolled[-1].next_offset - 1
    finished = metadata.cache(TIP).finished_segments()
    assert [(m.start_offset, m.end_offset) for m in finished] == [(s.base_offset, s.next_offset - 1) for s in rolled]
    [listing] = list_partitions(FsObjectStore(tmp_path / "remote"))
    assert [s.metadata.start_offset for s in listing.segments] == [s.base_offset for s in rolled]
    assert _copy(ctx, part) == 0                                   # nothing new: nothing uploaded twice


def test_a_segment_starting_below_where_uploads_stopped_starts_after_it(tmp_path):
    part, metadata = _partition(tmp_path), InMemoryMetadata()
    first = part.log.rolled_segments()[0]
    part.log.highest_offset_in_remote_storage.set(first.base_offset + 2)     # an old leader's upload ended here
    _copy(_ctx(FsObjectStore(tmp_path / "remote"), metadata), part)
    starts = [m.start_offset for m in metadata.cache(TIP).finished_segments()]
    assert starts[0] == first.base_offset + 3


def test_consumers_read_uploaded_data_after_local_deletion(tmp_path):
    part, metadata = _partition(tmp_path, local_retention_bytes=2000), InMemoryMetadata()
    original = read_all(part.log, 0)
    store = FsObjectStore(tmp_path / "remote")
    _copy(_ctx(store, metadata), part)
    part.log.enforce_retention(NOW)
    assert part.log.local_log_start_offset > 0 and part.log.log_start_offset == 0
    reader = RemoteReader(NodeConfig({"node.id": "1", "rsm.config.chunk.size": "1000"}), RemoteSegmentStore(store),
                          metadata, tmp_path / "chunks")

    async def read_everything():
        out, offset = bytearray(), 0
        while offset < part.log.local_log_start_offset:
            answer = await reader.read(part, offset, 1500, True)
            assert answer.error == ErrorCode.NONE and answer.records
            out += answer.records
            offset = _next_offset(answer.records)
        return bytes(out)
    remote = asyncio.run(read_everything())
    assert original.startswith(remote) and len(remote) > 0


def _next_offset(data: bytes) -> int:
    return list(iter_batches(data))[-1][1].last_offset + 1


def test_a_failing_store_deletes_nothing_locally_and_abandons_its_upload(tmp_path):
    part, metadata = _partition(tmp_path, local_retention_bytes=2000), InMemoryMetadata()
    with pytest.raises(RemoteStorageError):
        _copy(_ctx(FailingStore(tmp_path / "remote"), metadata), part)
    assert part.log.highest_offset_in_remote_storage.value == -1
    part.log.enforce_retention(NOW)
    assert part.log.local_log_start_offset == 0                       # nothing goes before its upload
    states = [m.state for m in metadata.cache(TIP).segments()]
    assert states == []                                               # the STARTED id was marked deleted


def test_remote_retention_raises_the_log_start_before_deleting(tmp_path):
    part, metadata = _partition(tmp_path, retention_bytes=3000, local_retention_bytes=2000), InMemoryMetadata()
    ctx = _ctx(FsObjectStore(tmp_path / "remote"), metadata)
    _copy(ctx, part)
    before = metadata.cache(TIP).finished_segments()
    deleted = asyncio.run(expiration_pass(ctx, TIP, part))
    after = metadata.cache(TIP).finished_segments()
    assert deleted > 0 and len(after) == len(before) - deleted
    assert part.log.log_start_offset == after[0].start_offset if after else part.log.log_start_offset > 0
    [listing] = list_partitions(FsObjectStore(tmp_path / "remote"))
    assert len(listing.segments) == len(after)
    assert all(m.state == RemoteLogSegmentState.COPY_SEGMENT_FINISHED for m in after)


class LeaderConn:
    """The leader's answers to the follower's ListOffsets (-4 local log start, -2 log start)."""

    def __init__(self, local_start, log_start=0):
        self.answers = {-4: local_start, -2: log_start}

    async def request(self, api_key, version, body, timeout_s):
        p = body["Topics"][0]["Partitions"][0]
        return {"Topics": [{"Name": "t", "Partitions": [
            {"PartitionIndex": 0, "ErrorCode": 0, "Offset": self.answers[p["Timestamp"]], "Timestamp": -1,
             "LeaderEpoch": 0}]}]}


def test_an_empty_follower_rebuilds_from_the_segment_before_the_leaders_local_start(tmp_path):
    leader, metadata = _partition(tmp_path / "leader", local_retention_bytes=2000), InMemoryMetadata()
    store = FsObjectStore(tmp_path / "remote")
    _copy(_ctx(store, metadata), leader)
    leader.log.enforce_retention(NOW)
    local_start = leader.log.local_log_start_offset
    follower_log = Log.open(tmp_path / "follower" / "t-0", leader.log.config, NOW)
    follower = Partition("t", 0, TOPIC_ID, follower_log, leader_id=1, leader_epoch=0)
    pool = ThreadPoolExecutor(1)
    remote = type("Tier", (), {"metadata": metadata, "segments": RemoteSegmentStore(store), "follower_pool": pool})
    error = asyncio.run(build_remote_log_aux_state(remote, LeaderConn(local_start), 2, follower, 0))
    assert error == ErrorCode.NONE
    assert (follower_log.log_start_offset, follower_log.local_log_start_offset) == (0, local_start)
    assert follower_log.log_end_offset == local_start and follower_log.epoch_entries() == [(0, 0)]
    assert local_start % 3 == 0                                       # batches of 3, sequence = offset
    retry = follower_log.append(batch(3, producer_id=7, producer_epoch=0, base_sequence=local_start - 3), 0, NOW)
    assert retry.last_offset == local_start - 1                       # a duplicate: the producer state came along


def test_topic_deletion_waits_for_an_upload_its_worker_thread_is_still_running(tmp_path):
    part, metadata = _partition(tmp_path), InMemoryMetadata()
    store = FsObjectStore(tmp_path / "remote")
    rlm = RemoteLogManager(1, NodeConfig({"node.id": "1"}), RemoteSegmentStore(store), metadata, lambda: NOW)
    copier, deleter = StartedExecutor(), StartedExecutor()
    rlm._copier = rlm.ctx.pool = copier
    rlm._deleter = rlm.ctx.delete_pool = deleter

    async def scenario():
        metadata.assign(TIP)
        copying = asyncio.get_running_loop().create_task(copy_pass(rlm.ctx, TIP, part, lambda: True))
        await _settle()
        assert len(copier.jobs) == 1                     # the first upload runs on a worker thread
        copying.cancel()                                 # the topic is deleted: the copy task is cancelled
        rlm.on_stopped(part, topic_deleted=True)
        for _ in range(3):
            await _settle()
            deleter.run_all()                            # whatever deleting the prefix the loop asked for
            await _settle()
            copier.run_all()                             # the worker's upload ends, objects written
        await _settle()
        await rlm.close()

    asyncio.run(scenario())
    assert store.list_keys("") == []                     # no orphaned objects of the deleted topic


def test_a_zombie_upload_outside_the_leaders_epoch_lineage_is_never_served(tmp_path):
    part, metadata = _partition(tmp_path, local_retention_bytes=2000), InMemoryMetadata()
    store = FsObjectStore(tmp_path / "remote")
    ctx = _ctx(store, metadata)
    _copy(ctx, part)
    first = part.log.rolled_segments()[0]
    ours = metadata.cache(TIP).finished_segments()[0]
    zombie = replace(ours, segment_id=RemoteLogSegmentId(TIP, bytes(16)), segment_leader_epochs=((3, 0),),
                     state=S.COPY_SEGMENT_STARTED)
    ctx.segments.copy_log_segment(zombie, LogSegmentData(first.log_path, first.offset_index_path,
                                                         first.time_index_path, None, b"0\n1\n3 0\n"))
    part.log.enforce_retention(NOW)

    async def read_at_zero():
        for record in (zombie, metadata_update(ctx, zombie, S.COPY_SEGMENT_FINISHED),
                       metadata_update(ctx, ours, S.DELETE_SEGMENT_STARTED)):
            await metadata.publish(record)           # an old leader's epoch 3 upload; ours is being deleted
        reader = RemoteReader(NodeConfig({"node.id": "1"}), RemoteSegmentStore(store), metadata, tmp_path / "chunks")
        return await reader.read(part, 0, 1500, True)
    assert asyncio.run(read_at_zero()).error == ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_late_finished_upload_of_an_old_leader_is_not_uploaded_again(tmp_path):
    part, metadata = _partition(tmp_path), InMemoryMetadata()
    ctx = _ctx(FsObjectStore(tmp_path / "remote"), metadata)
    first = part.log.rolled_segments()[0]
    old = metadata_for(first.base_offset, first.next_offset - 1)

    async def old_leader_finishes_late():
        metadata.assign(TIP)
        await metadata.publish(old)
        await metadata.publish(metadata_update(ctx, old, S.COPY_SEGMENT_FINISHED))
    asyncio.run(old_leader_finishes_late())
    assert part.log.highest_offset_in_remote_storage.value == -1     # this leader resumed before it finished
    _copy(ctx, part)
    spans = [(m.start_offset, m.end_offset) for m in metadata.cache(TIP).finished_segments()]
    assert all(b[0] > a[1] for a, b in itertools.pairwise(spans)), spans    # nothing uploaded twice


def metadata_for(start, end):
    return RemoteLogSegmentMetadata(RemoteLogSegmentId(TIP, bytes(range(1, 17))), start, end, NOW, 2, NOW,
                                    ((0, start),), 100)


def test_encrypted_uploads_are_served_decrypted_and_never_without_the_key(tmp_path):
    keys = EncryptionSettings(KeyRing({"k1": os.urandom(32)}, "k1"), 4096)
    part, metadata = _partition(tmp_path, local_retention_bytes=2000), InMemoryMetadata()
    original = read_all(part.log, 0)
    store = FsObjectStore(tmp_path / "remote")
    ctx = TaskContext(1, RemoteSegmentStore(store, keys), metadata, ThreadPoolExecutor(2), ThreadPoolExecutor(1),
                      ByteRateLimit(UNLIMITED, 0.0), lambda: NOW)
    _copy(ctx, part)
    assert all(m.custom_metadata for m in metadata.cache(TIP).finished_segments())    # FINISHED names the key
    part.log.enforce_retention(NOW)
    assert part.log.local_log_start_offset > 0
    cfg = NodeConfig({"node.id": "1", "rsm.config.chunk.size": "1000"})
    reader = RemoteReader(cfg, RemoteSegmentStore(store, keys), metadata, tmp_path / "chunks")
    answer = asyncio.run(reader.read(part, 0, 1500, True))
    assert answer.error == ErrorCode.NONE and original.startswith(bytes(answer.records)) and answer.records
    keyless = RemoteReader(cfg, RemoteSegmentStore(store), metadata, tmp_path / "chunks2")
    assert asyncio.run(keyless.read(part, 0, 1500, True)) == (ErrorCode.UNKNOWN_SERVER_ERROR, b"", ())


def _aborted_txn_partition(tmp_path) -> Partition:
    """Producer 5's transaction spans two segments and is aborted by a marker in the second (45);
    producer 7's records after it roll that segment too."""
    log = Log.open(tmp_path / "t-0", config(internal_segment_bytes=2000, remote_storage_enable="true",
                                            local_retention_bytes=2000), NOW)
    log.assign_epoch_start_offset(0, 0)
    for seq in range(0, 45, 3):
        log.append(batch(3, producer_id=5, producer_epoch=0, base_sequence=seq, transactional=True), 0, NOW)
    log.append_marker(bytearray(build_marker(5, 0, False, 1, NOW)), 0, NOW)
    for seq in range(0, 60, 3):
        log.append(batch(3, producer_id=7, producer_epoch=0, base_sequence=seq), 0, NOW)
    return Partition("t", 0, TOPIC_ID, log, leader_id=1, leader_epoch=0)


@pytest.mark.parametrize("encrypted", [False, True])
def test_read_committed_remote_reads_answer_aborted_transactions_from_the_uploaded_txnindex(tmp_path, encrypted):
    keys = EncryptionSettings(KeyRing({"k1": os.urandom(32)}, "k1"), 4096) if encrypted else None
    part, metadata, store = _aborted_txn_partition(tmp_path), InMemoryMetadata(), FsObjectStore(tmp_path / "remote")
    ctx = TaskContext(1, RemoteSegmentStore(store, keys), metadata, ThreadPoolExecutor(2), ThreadPoolExecutor(1),
                      ByteRateLimit(UNLIMITED, 0.0), lambda: NOW)
    _copy(ctx, part)
    [listing] = list_partitions(store)
    with_index = [s.metadata.start_offset for s in listing.segments if IndexType.TRANSACTION.value in s.objects]
    assert len(with_index) == 1 and with_index[0] > 0        # the marker's segment only, not the data's first one
    part.log.enforce_retention(NOW)
    assert part.log.local_log_start_offset > 45 and part.aborted_transactions(0, 46) == []   # gone locally
    reader = RemoteReader(NodeConfig({"node.id": "1", "rsm.config.chunk.size": "1000"}),
                          RemoteSegmentStore(store, keys), metadata, tmp_path / "chunks")
    committed = asyncio.run(reader.read(part, 0, 500, True, read_committed=True))
    assert committed.error == ErrorCode.NONE and committed.records
    assert committed.aborted == (AbortedTxn(5, 0, 45, 46),)  # found in the next segment's index
    assert asyncio.run(reader.read(part, 0, 500, True)).aborted == ()
    after = asyncio.run(reader.read(part, 46, 500, True, read_committed=True))
    assert after.records and after.aborted == ()


def test_a_led_partition_whose_topic_turns_tiered_starts_uploading(tmp_path):
    """Led partitions of untiered topics share one watching task (no task each); once the topic
    turns tiered, the next interval starts the partition's own and its rolled segments go up."""
    part, metadata = _partition(tmp_path, remote_storage_enable="false"), InMemoryMetadata()
    lead(part, replicas=(1,))
    props = {"node.id": "1", "remote.log.manager.task.interval.ms": "20"}
    rlm = RemoteLogManager(1, NodeConfig(props), RemoteSegmentStore(FsObjectStore(tmp_path / "remote")), metadata,
                           lambda: NOW)

    async def scenario():
        rlm.on_leader(part)
        await asyncio.sleep(0.1)
        assert rlm._running == {} and metadata.cache(TIP) is None      # nothing per partition, nothing tiered
        part.update_config(config(internal_segment_bytes=2000, remote_storage_enable="true"))
        for _ in range(200):
            await asyncio.sleep(0.02)
            cache = metadata.cache(TIP)         # a pass uploads the rolled segments one after another
            if cache is not None and len(cache.finished_segments()) == len(part.log.rolled_segments()):
                break
        await rlm.close()
        return metadata.cache(TIP)

    cache = asyncio.run(scenario())
    assert cache is not None and len(cache.finished_segments()) == len(part.log.rolled_segments())


class ReplayingMetadata(InMemoryMetadata):
    """A metadata partition being consumed again from offset 0 (``RemoteLogMetadataManager._replay``,
    when another partition of it is assigned): the caches start afresh, not ready until caught up."""

    def __init__(self):
        super().__init__()
        self.replaying = False

    def is_ready(self, tip):
        return not self.replaying and super().is_ready(tip)


def test_expiration_waits_while_the_remote_log_metadata_is_read_again(tmp_path):
    """Half way through a replay, a finished upload may still look COPY_SEGMENT_STARTED (its FINISHED
    record not read back yet): the pass would take it for an upload another leader abandoned and delete
    it. A pass whose metadata is not caught up deletes nothing and moves no log start."""
    part, metadata = _partition(tmp_path, local_retention_bytes=2000), ReplayingMetadata()
    store = FsObjectStore(tmp_path / "remote")
    ctx = _ctx(store, metadata)
    _copy(ctx, part)
    uploaded = metadata.cache(TIP).finished_segments()
    metadata.replaying, metadata.caches[TIP] = True, RemoteLogMetadataCache(TIP)
    for m in uploaded:                                              # the STARTED records read back so far
        metadata.caches[TIP].apply(replace(m, state=S.COPY_SEGMENT_STARTED))
    assert asyncio.run(expiration_pass(ctx, TIP, part)) == 0
    [listing] = list_partitions(store)
    assert len(listing.segments) == len(uploaded) and part.log.log_start_offset == 0


class FailsAtLogPut(FsObjectStore):
    """Fails the upload of the ``.log`` whose segment starts at ``fail_start`` (once)."""

    fail_start = -1

    def put_file(self, key, path):
        if key.endswith(".log") and f"/{self.fail_start:020d}-" in key:
            self.fail_start = -1
            raise RemoteStorageError("connection reset")
        super().put_file(key, path)


def _table_ctx(tmp_path, store, metadata) -> TaskContext:
    from tierlog.broker.remote.tables import TableCommits
    pool = ThreadPoolExecutor(4)
    return TaskContext(1, RemoteSegmentStore(store), metadata, pool, pool, ByteRateLimit(UNLIMITED, 0.0),
                       lambda: NOW, tables=TableCommits(store, {}, tmp_path / "staging"))


def test_a_table_topics_pipelined_uploads_finish_in_order_and_one_that_fails_stops_the_ones_behind(tmp_path):
    pytest.importorskip("pyiceberg")
    from tierlog.tiered.table.catalog import covered_offsets
    part, metadata = _partition(tmp_path, tierlog_table_mode="key_value"), InMemoryMetadata()
    rolled = part.log.rolled_segments()
    assert len(rolled) >= 4
    store = FailsAtLogPut(tmp_path / "remote")
    store.fail_start = rolled[2].base_offset
    ctx = _table_ctx(tmp_path, store, metadata)
    with pytest.raises(RemoteStorageError, match="connection reset"):
        _copy(ctx, part)
    finished = metadata.cache(TIP).finished_segments()
    assert [m.start_offset for m in finished] == [s.base_offset for s in rolled[:2]]
    assert [m.state for m in metadata.cache(TIP).segments()] == [S.COPY_SEGMENT_FINISHED] * 2   # no STARTED left
    assert part.log.highest_offset_in_remote_storage.value == rolled[1].next_offset - 1
    table = ctx.tables._writer_now().catalog.load("t")
    assert covered_offsets(table) == {0: rolled[1].next_offset - 1}
    assert not ctx.in_flight
    assert _copy(ctx, part) == len(rolled) - 2                   # the retry takes the rest, in order
    table = table.refresh()
    offsets = sorted(table.scan().to_arrow().column("offset").to_pylist())
    assert offsets == list(range(rolled[-1].next_offset))          # every offset once
    [listing] = list_partitions(FsObjectStore(tmp_path / "remote"))
    assert [s.metadata.start_offset for s in listing.segments] == [s.base_offset for s in rolled]
