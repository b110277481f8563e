"""A data file entry built from the writer's own Parquet footer is the one pyiceberg's add_files reads back."""
import logging
import uuid

from pyiceberg.io.pyarrow import parquet_file_to_data_file

from tierlog.records import Record, build_batch
from tierlog.storage.table_config import KEY_VALUE
from tierlog.tiered import FsObjectStore
from tierlog.tiered.table import data_files
from tierlog.tiered.table.catalog import TableCatalog, table_settings
from tierlog.tiered.table.data_files import data_file
from tierlog.tiered.table.writer import SegmentCommit, TableWriter

NOW = 1_700_000_000_000


def test_the_entry_from_the_footer_has_add_files_bounds_counts_and_partition_without_a_warning(tmp_path, caplog,
                                                                                             monkeypatch):
    store = FsObjectStore(tmp_path / "remote")
    store.root.mkdir()
    writer = TableWriter(store, TableCatalog(table_settings(store, {})), tmp_path / "staging")
    log = tmp_path / "0.log"
    log.write_bytes(build_batch([Record(o, NOW + o, b"k", b"v%d" % o, [("h", b"x")]) for o in range(5, 25)],
                                base_offset=5))
    written = []

    def keep(metadata, file):
        written.append(file)
        return data_file(metadata, file)
    monkeypatch.setattr(data_files, "data_file", keep)
    with caplog.at_level(logging.WARNING, logger="pyiceberg"):
        writer.commit_segment(SegmentCommit("t", 3, uuid.uuid4(), 5, 24, log, [], KEY_VALUE))
    assert not [r for r in caplog.records if "statistics missing" in r.getMessage()]
    table = writer.catalog.load("t")
    [file] = written
    ours = data_file(table.metadata, file)
    theirs = parquet_file_to_data_file(table.io, table.metadata, file.uri)
    assert (ours.file_path, ours.record_count, ours.file_size_in_bytes, ours.partition) == \
        (theirs.file_path, theirs.record_count, theirs.file_size_in_bytes, theirs.partition) == \
        (file.uri, 20, file.size, theirs.partition)
    ids = {f.name: f.field_id for f in table.schema().fields}
    for name in ("partition", "offset", "timestamp", "timestamp_type"):
        fid = ids[name]
        assert ours.lower_bounds[fid] == theirs.lower_bounds[fid] and ours.upper_bounds[fid] == theirs.upper_bounds[fid]
    assert ours.split_offsets == theirs.split_offsets
    [task] = table.scan().plan_files()
    assert task.file.lower_bounds == ours.lower_bounds and task.file.record_count == 20
