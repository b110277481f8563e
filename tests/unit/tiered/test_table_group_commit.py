"""Group commit of a topic's segments: the plan against the covered offsets, the queue, the writer from threads."""
import threading
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tierlog.records import Record, build_batch
from tierlog.storage.table_config import KEY_VALUE
from tierlog.tiered import FsObjectStore, RemoteStorageError
from tierlog.tiered.table.catalog import TableCatalog, covered_offsets, table_settings
from tierlog.tiered.table.group_commit import CommitQueue, Pending, plan_commit
from tierlog.tiered.table.writer import SegmentCommit, TableWriter

NOW = 1_700_000_000_000


def _p(partition: int, start: int, end: int, above: int) -> Pending:
    return Pending(partition, start, end, above, f"s{partition}-{start}", f"file:///{partition}-{start}")


def test_the_plan_takes_what_follows_the_covered_offset_and_refuses_an_overlap():
    pending = [_p(1, 100, 199, 99), _p(0, 100, 199, 99), _p(0, 0, 99, -1), _p(2, 0, 99, -1), _p(3, 50, 99, 49)]
    plan = plan_commit(pending, {1: 99, 2: 120, 3: 70})
    assert sorted(plan.accepted) == [0, 1, 2]             # partition 0's two segments in offset order
    assert plan.covered == [3]                            # partition 2 covers 120 already: done by another attempt
    assert list(plan.refused) == [4] and "covers partition 3 to 70" in plan.refused[4]
    assert plan.last_offsets == {0: 199, 1: 199}
    summary = plan.summary(pending)
    assert summary["tierlog.last-offset.0"] == "199" and summary["tierlog.start-offset.0"] == "0"
    assert summary["tierlog.segment-id.0"] == "s0-0,s0-100" and summary["tierlog.last-offset.1"] == "199"
    assert "tierlog.last-offset.3" not in summary


def test_the_queue_commits_what_waits_in_one_group_and_hands_each_thread_its_outcome():
    calls: list[list[int]] = []
    first_in = threading.Event()
    release = threading.Event()

    def commit(items: list[int]) -> list[object]:
        calls.append(list(items))
        if len(calls) == 1:
            first_in.set()
            assert release.wait(30)
        return [ValueError(f"bad {i}") if i == 3 else i * 10 for i in items]

    queue: CommitQueue[int, int] = CommitQueue(commit, max_items=2)
    with ThreadPoolExecutor(5) as pool:
        first = pool.submit(queue.submit, 0)
        assert first_in.wait(30)
        later = [pool.submit(queue.submit, i) for i in (1, 2, 3, 4)]
        deadline = time.monotonic() + 30
        while len(queue._queue) < 4:                      # all four wait behind the first commit
            assert time.monotonic() < deadline
            time.sleep(0.01)
        release.set()
        assert first.result(30) == 0
        assert [f.result(30) for f in later[:2]] == [10, 20]
        with pytest.raises(ValueError, match="bad 3"):
            later[2].result(30)
        assert later[3].result(30) == 40
    assert calls == [[0], [1, 2], [3, 4]]                 # groups of at most max_items, in arrival order


def test_segments_of_many_partitions_from_threads_are_committed_exactly(tmp_path):
    store = FsObjectStore(tmp_path / "remote")
    store.root.mkdir()
    writer = TableWriter(store, TableCatalog(table_settings(store, {})), tmp_path / "staging")
    segments = []
    for p in range(4):
        for start in (0, 50, 100):
            log = tmp_path / f"{p}-{start}.log"
            log.write_bytes(build_batch([Record(o, NOW + o, None, b"%d-%d" % (p, o)) for o in range(start, start + 50)],
                                        base_offset=start))
            segments.append(SegmentCommit("t", p, uuid.uuid4(), start, start + 49, log, [], KEY_VALUE))

    def upload(p: int) -> None:                           # each partition in offset order, as its copy pass does
        for seg in (s for s in segments if s.partition == p):
            writer.commit_segment(seg)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(upload, range(4)))
    table = writer.catalog.load("t")
    assert covered_offsets(table) == {p: 149 for p in range(4)}
    rows = table.scan().to_arrow()
    got = sorted(zip(rows.column("partition").to_pylist(), rows.column("offset").to_pylist(), strict=True))
    assert got == [(p, o) for p in range(4) for o in range(150)]
    assert writer.stats.commits == {"t": 12}
    for snap in table.snapshots():                        # each commit names its partitions' segments
        parts = {k.rsplit(".", 1)[1] for k in snap.summary.additional_properties if k.startswith("tierlog.last-offset.")}
        assert parts and all(f"tierlog.segment-id.{p}" in snap.summary.additional_properties for p in parts)
    assert len(table.snapshots()) <= 12


def test_the_transaction_computes_the_staged_metadata_once_per_change(tmp_path):
    from pyiceberg.table.update import update_table_metadata

    from tierlog.tiered.table.transaction import transaction
    store = FsObjectStore(tmp_path / "remote")
    store.root.mkdir()
    writer = TableWriter(store, TableCatalog(table_settings(store, {})), tmp_path / "staging")
    log = tmp_path / "0.log"
    log.write_bytes(build_batch([Record(o, NOW + o, None, b"v") for o in range(10)], base_offset=0))
    writer.commit_segment(SegmentCommit("t", 0, uuid.uuid4(), 0, 9, log, [], KEY_VALUE))
    table = writer.catalog.load("t")
    tx = transaction(table)
    first = tx.table_metadata
    assert tx.table_metadata is first                     # no change staged: the same object, not a copy
    tx.set_properties({"tierlog.test": "1"})
    staged = tx.table_metadata
    assert staged is not first and staged.properties["tierlog.test"] == "1"
    assert tx.table_metadata is staged
    expected = update_table_metadata(table.metadata, tx._updates)     # pyiceberg's own, deep-copied
    assert staged.model_copy(update={"last_updated_ms": expected.last_updated_ms}) == expected
    tx.commit_transaction()
    assert writer.catalog.load("t").properties["tierlog.test"] == "1"


def _writer_and_segments(tmp_path, starts=(0, 50, 100)) -> tuple[TableWriter, list[SegmentCommit]]:
    store = FsObjectStore(tmp_path / "remote")
    store.root.mkdir()
    writer = TableWriter(store, TableCatalog(table_settings(store, {})), tmp_path / "staging")
    segments = []
    for start in starts:
        log = tmp_path / f"{start}.log"
        log.write_bytes(build_batch([Record(o, NOW + o, None, b"%d" % o) for o in range(start, start + 50)],
                                    base_offset=start))
        segments.append(SegmentCommit("t", 0, uuid.uuid4(), start, start + 49, log, [], KEY_VALUE))
    return writer, segments


def test_a_pipelined_segment_is_written_before_the_one_ahead_lands_and_committed_after_it(tmp_path):
    writer, (first, second, third) = _writer_and_segments(tmp_path)
    handoffs = [threading.Event() for _ in range(3)]
    with ThreadPoolExecutor(3) as pool:                   # the later ones reach the writer first
        later = [pool.submit(writer.commit_segment, third, handoffs[1], handoffs[2]),
                 pool.submit(writer.commit_segment, second, handoffs[0], handoffs[1])]
        deadline = time.monotonic() + 30
        while not list((tmp_path / "remote").rglob("*.parquet")):   # a pipelined file is in the store already
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert covered_offsets(writer.catalog.load("t")) == {}
        writer.commit_segment(first, None, handoffs[0])
        for f in later:
            f.result(30)
    table = writer.catalog.load("t")
    assert covered_offsets(table) == {0: 149}
    assert sorted(table.scan().to_arrow().column("offset").to_pylist()) == list(range(150))
    assert all(h.is_set() for h in handoffs)


def test_a_pipelined_segment_whose_predecessor_never_lands_is_refused(tmp_path):
    writer, (first, second) = _writer_and_segments(tmp_path, starts=(0, 50))
    ahead = threading.Event()
    ahead.set()                                           # the upload before it failed: it never queues
    with pytest.raises(RemoteStorageError, match="the table covers partition 0 to -1"):
        writer.commit_segment(second, ahead, threading.Event())
    assert covered_offsets(writer.catalog.load("t")) == {}
    writer.commit_segment(first)                          # the retry, in order
    writer.commit_segment(second)
    assert sorted(writer.catalog.load("t").scan().to_arrow().column("offset").to_pylist()) == list(range(100))


def test_a_group_waits_for_an_announced_item_and_not_longer_than_its_bound():
    calls: list[list[int]] = []
    queue: CommitQueue[int, int] = CommitQueue(lambda items: calls.append(list(items)) or items, wait_s=30)
    announced = threading.Event()
    release = threading.Event()

    def late() -> int:
        with queue.coming() as arrival:
            announced.set()
            assert release.wait(30)                       # its file still being written
            return queue.submit(2, arrival=arrival)
    with ThreadPoolExecutor(2) as pool:
        second = pool.submit(late)
        assert announced.wait(30)
        first = pool.submit(queue.submit, 1)
        deadline = time.monotonic() + 30
        while not queue._busy:                            # the first item's thread holds the group open
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert calls == []
        release.set()
        assert (first.result(30), second.result(30)) == (1, 2)
    assert calls == [[1, 2]]                              # one commit for both

    bounded: CommitQueue[int, int] = CommitQueue(lambda items: items, wait_s=0.05)
    with bounded.coming():                                # announced, never submitted: the group goes anyway
        assert bounded.submit(3) == 3
    assert bounded._coming == 0


def test_the_sql_catalog_commits_on_the_metadata_the_table_holds_and_a_stale_one_as_pyiceberg_would(tmp_path):
    """``sql_commit.SqlCatalogOnBase``: no reload before a commit; what it writes is what a reader loads
    (the metadata log naming the file before). A table that is behind commits as pyiceberg's own path
    would: a change of properties lands on the current metadata, an append planned on an older
    snapshot is refused (CommitFailedException: the writer reloads and plans again)."""
    from pyiceberg.exceptions import CommitFailedException

    from tierlog.tiered.table.data_files import append_written
    from tierlog.tiered.table.sql_commit import SqlCatalogOnBase
    writer, [seg, *_] = _writer_and_segments(tmp_path)
    writer.commit_segment(seg)
    ahead, behind = writer.catalog.load("t"), writer.catalog.load("t")
    assert isinstance(ahead.catalog, SqlCatalogOnBase)
    before = ahead.metadata_location
    with ahead.transaction() as tx:
        tx.set_properties({"tierlog.test": "1"})
    loaded = writer.catalog.load("t")
    assert loaded.metadata_location == ahead.metadata_location != before
    assert loaded.metadata == ahead.metadata and loaded.properties["tierlog.test"] == "1"
    assert loaded.metadata.metadata_log[-1].metadata_file == before
    with behind.transaction() as tx:
        tx.set_properties({"tierlog.other": "2"})
    now = writer.catalog.load("t")
    assert (now.properties["tierlog.test"], now.properties["tierlog.other"]) == ("1", "2")
    metadata_files = set((tmp_path / "remote").rglob("*.metadata.json"))
    stale = writer.catalog.load("t")
    with ahead.transaction() as tx:                     # ahead is behind now, by the properties' commit
        append_written(tx, [], {})
    with pytest.raises(CommitFailedException), stale.transaction() as tx:
        append_written(tx, [], {})
    assert set((tmp_path / "remote").rglob("*.metadata.json")) - metadata_files == \
        {Path(urllib.parse.urlsplit(writer.catalog.load("t").metadata_location).path)}


def test_manifests_are_merged_so_the_manifest_list_stays_short(tmp_path):
    """Each append adds a manifest; from 100 on they are merged (commit.manifest-merge.enabled), so a
    commit does not cost in proportion to the commits before it, and every row stays."""
    writer, segments = _writer_and_segments(tmp_path, starts=tuple(range(0, 120 * 50, 50)))
    for seg in segments:
        writer.commit_segment(seg)
    table = writer.catalog.load("t")
    assert table.properties["commit.manifest-merge.enabled"] == "true"
    assert len(table.current_snapshot().manifests(table.io)) < 30
    assert sorted(table.scan().to_arrow().column("offset").to_pylist()) == list(range(120 * 50))
    assert len(list(table.scan().plan_files())) == 120
