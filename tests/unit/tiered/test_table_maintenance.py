"""Table upkeep: snapshot expiry and unreferenced Parquet objects, on a table the writer made."""
import time
import uuid

from tierlog.records import Record, build_batch
from tierlog.storage.table_config import KEY_VALUE
from tierlog.tiered import FsObjectStore
from tierlog.tiered.table.catalog import TableCatalog, store_uri, table_settings
from tierlog.tiered.table.group_commit import Pending
from tierlog.tiered.table.maintenance import orphan_keys
from tierlog.tiered.table.writer import SegmentCommit, TableWriter

NOW = 1_700_000_000_000
DATA = "tierlog-tables/topics/t/data/partition=0/"


def _name(start: int) -> str:
    return f"{DATA}{start:020d}-{uuid.uuid4()}.parquet"


def test_orphans_are_unreferenced_files_starting_at_or_below_the_covered_offset():
    kept, crashed, under_way = _name(0), _name(100), _name(200)
    listed = [kept, crashed, under_way, DATA + "notes.txt"]
    assert orphan_keys(listed, {kept}, covered=199) == [crashed]


def _writer(tmp_path):
    store = FsObjectStore(tmp_path / "remote")
    store.root.mkdir()
    return store, TableWriter(store, TableCatalog(table_settings(store, {})), tmp_path / "staging")


def _commit(writer, tmp_path, start: int, end: int) -> None:
    log = tmp_path / f"{start}.log"
    log.write_bytes(build_batch([Record(o, NOW + o, None, b"v%d" % o) for o in range(start, end + 1)],
                                base_offset=start))
    writer.commit_segment(SegmentCommit("t", 0, uuid.uuid4(), start, end, log, [], KEY_VALUE))


def test_upkeep_expires_old_snapshots_and_deletes_what_only_they_or_no_one_referenced(tmp_path):
    store, writer = _writer(tmp_path)
    for start in (0, 100, 200):
        _commit(writer, tmp_path, start, start + 99)
    crashed = _name(100)                                 # a crashed attempt's file: never committed
    store.put_bytes(crashed, b"PAR1")
    under_way = _name(300)                               # above what is covered: a commit under way
    store.put_bytes(under_way, b"PAR1")
    writer.expire("t", 0, 150, KEY_VALUE, "")            # retention: [100, 199]'s file rewritten from 150
    files_before = set(store.list_keys(DATA))

    now = int(time.time() * 1000) + 1000           # snapshots are stamped with the wall clock
    assert writer.upkeep("t", 0, KEY_VALUE, "", now, 10**9) == (0, 1)    # snapshots kept: only the crash
    table = writer.catalog.load("t")
    assert len(table.snapshots()) == 5 and crashed not in store.list_keys(DATA)

    expired, removed = writer.upkeep("t", 0, KEY_VALUE, "", now, 0)
    table = writer.catalog.load("t")
    assert expired == 4 and len(table.snapshots()) == 1
    assert removed == 2                                  # the dropped [0, 99] file and the rewritten one's original
    left = set(store.list_keys(DATA))
    assert under_way in left and len(left) == len(files_before) - 3
    assert sorted(table.scan().to_arrow().column("offset").to_pylist()) == list(range(150, 300))


def test_two_attempts_at_one_segment_commit_it_once(tmp_path):
    """A deposed leader's upload still committing while the new leader's commits the same segment: the
    one that loses the race reloads, sees the segment covered and adds nothing (pyiceberg's own retry
    would re-apply its append)."""
    from tierlog.tiered.table.writer import _append
    store, writer = _writer(tmp_path)
    _commit(writer, tmp_path, 0, 99)
    stale = writer.catalog.load("t")                      # the old attempt read the table here
    _commit(writer, tmp_path, 100, 199)                   # the new leader's attempt lands first
    [landed] = [k for k in store.list_keys(DATA) if "/00000000000000000100-" in k]
    own = _name(100)                                      # the old attempt's own copy of the rows
    store.put_bytes(own, store.get_range(landed, 0))
    late = Pending(0, 100, 199, 99, str(uuid.uuid4()), store_uri(store, own))
    assert _append(stale, "t", [late]) == {}              # done: nothing refused, nothing added
    table = writer.catalog.load("t")
    assert len(list(table.scan().plan_files())) == 2 and table.properties["commit.retry.num-retries"] == "0"
    assert sorted(table.scan().to_arrow().column("offset").to_pylist()) == list(range(200))
