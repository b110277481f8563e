"""SnapshotFetcher: the follower's chunked FetchSnapshot download."""

from tierlog.raft.messages import FetchSnapshotResponse
from tierlog.raft.snapshot_fetch import ChunkResult, SnapshotFetcher
from tierlog.raft.snapshots import MemorySnapshotStore, SnapshotWriter
from tierlog.raft.types import Err, OffsetAndEpoch

SID = OffsetAndEpoch(10, 2)


def _leader_snapshot() -> bytes:
    store = MemorySnapshotStore()
    w = SnapshotWriter(store.create(SID), 0, lambda *a: None)
    w.append([b"state"])
    w.freeze()
    return store.read_all(SID)


def _fetcher(chunk=8):
    metrics = {"snapshots-fetched": 0}
    store = MemorySnapshotStore()
    return SnapshotFetcher(store, chunk, metrics), store, metrics


def _chunk(data, position, n):
    return FetchSnapshotResponse(Err.NONE, 1, 3, SID, len(data), position, data[position:position + n])


def test_downloads_in_chunks_then_completes():
    data = _leader_snapshot()
    f, store, metrics = _fetcher()
    assert f.start(SID) and f.active and f.snapshot_id == SID
    while True:
        req = f.request("t", 2, 3)
        assert req.max_bytes == 8 and f.matches(req)
        result = f.on_response(_chunk(data, req.position, req.max_bytes))
        if result is not ChunkResult.MORE:
            break
    assert result is ChunkResult.COMPLETE and not f.active
    assert store.read_all(SID) == data and metrics["snapshots-fetched"] == 1


def test_a_held_snapshot_is_not_downloaded():
    f, store, _ = _fetcher()
    w = store.create(SID)
    w.append(_leader_snapshot())
    w.freeze()
    assert not f.start(SID) and not f.active


def test_an_error_abandons_the_download_and_stale_answers_do_not_match():
    data = _leader_snapshot()
    f, store, _ = _fetcher()
    f.start(SID)
    first = f.request("t", 2, 3)
    f.on_response(_chunk(data, 0, 8))
    assert not f.matches(first)  # the position moved on
    assert f.on_response(FetchSnapshotResponse(Err.SNAPSHOT_NOT_FOUND, 1, 3, SID)) is ChunkResult.FAILED
    assert not f.active and store.list() == []


def test_a_corrupt_snapshot_is_deleted():
    data = bytearray(_leader_snapshot())
    data[-3] ^= 0xFF
    f, store, _ = _fetcher(chunk=1 << 20)
    f.start(SID)
    assert f.on_response(_chunk(bytes(data), 0, len(data))) is ChunkResult.INVALID
    assert store.list() == []
