"""The table core: a segment's committed records into its topic's Iceberg table, idempotent by offset."""
from __future__ import annotations

import json
import struct
import uuid

import duckdb
import pytest

from tierlog.records import Record, build_batch
from tierlog.storage.table_config import KEY_VALUE, VALUE_JSON, parse_value_schema
from tierlog.storage.txn_index import AbortedTxn
from tierlog.tiered import FsObjectStore, RemoteStorageError
from tierlog.tiered.table import rows
from tierlog.tiered.table.catalog import TableCatalog, covered_offsets, table_settings
from tierlog.tiered.table.json_values import parse_value
from tierlog.tiered.table.rows import committed_batches
from tierlog.tiered.table.writer import SegmentCommit, TableWriter

NOW = 1_700_000_000_000
SCHEMA = json.dumps({"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": ["string", "null"]}},
                     "required": ["id"]})
PID_OK, PID_ABORTED = 7, 9


def _marker(offset: int, pid: int, commit: bool) -> bytes:
    key, value = struct.pack(">hh", 0, 1 if commit else 0), struct.pack(">hi", 0, 0)
    return build_batch([Record(offset, NOW + offset, key, value)], base_offset=offset, producer_id=pid,
                       producer_epoch=0, transactional=True, control=True)


def _segment() -> tuple[bytes, list[AbortedTxn]]:
    """Offsets 10..21: 10-13 plain (12 malformed JSON), 14-15 aborted txn + marker 16, 17-18 committed
    txn + marker 19, 20-21 plain (21 misses its required id)."""
    def values(first, texts, **kw):
        return build_batch([Record(first + i, NOW + first + i, b"k%d" % (first + i), t,
                                   [("h", b"v%d" % (first + i))]) for i, t in enumerate(texts)],
                           base_offset=first, **kw)
    ok = [b'{"id": %d, "name": "n%d"}' % (i, i) for i in range(30)]
    data = (values(10, [ok[10], ok[11], b"{not json", ok[13]])
            + values(14, [ok[14], ok[15]], producer_id=PID_ABORTED, producer_epoch=0, base_sequence=0,
                     transactional=True)
            + _marker(16, PID_ABORTED, commit=False)
            + values(17, [ok[17], ok[18]], producer_id=PID_OK, producer_epoch=0, base_sequence=0, transactional=True)
            + _marker(19, PID_OK, commit=True)
            + values(20, [ok[20], b'{"name": "x"}']))
    return data, [AbortedTxn(PID_ABORTED, 14, 16, 14)]


def _committed(data, start, end, aborted) -> list[dict]:
    return [row for batch in committed_batches(data, "t", 0, start, end, aborted) for row in batch.to_pylist()]


def test_committed_records_leave_out_markers_aborted_data_and_offsets_outside_the_range():
    data, aborted = _segment()
    assert [r["offset"] for r in _committed(data, 10, 21, aborted)] == [10, 11, 12, 13, 17, 18, 20, 21]
    assert [r["offset"] for r in _committed(data, 12, 17, aborted)] == [12, 13, 17]
    assert [r["offset"] for r in _committed(data, 10, 21, [])] == [10, 11, 12, 13, 14, 15, 17, 18, 20, 21]
    first = _committed(data, 10, 21, aborted)[0]
    assert (first["key"], first["headers"], first["timestamp"].timestamp() * 1000, first["timestampType"]) == \
        (b"k10", [{"key": "h", "value": b"v10"}], NOW + 10, 0)


def test_committed_batches_are_decoded_in_bounded_chunks(monkeypatch):
    data, aborted = _segment()
    monkeypatch.setattr(rows, "CHUNK_BYTES", 1)        # every batch a chunk of its own
    batches = list(committed_batches(data, "t", 0, 10, 21, aborted))
    assert [b.column("offset").to_pylist() for b in batches] == [[10, 11, 12, 13], [17, 18], [20, 21]]


@pytest.mark.parametrize(("value", "row", "error"), [
    (b'{"id": 1, "name": "a"}', {"id": 1, "name": "a"}, None),
    (b'{"id": 2.0}', {"id": 2, "name": None}, None),
    (b'{"id": 1, "name": null, "extra": [1]}', {"id": 1, "name": None}, None),
    (None, None, "the value is null"),
    (b"\xff", None, "the value is not UTF-8"),
    (b"{", None, "the value is not JSON"),
    (b"[1]", None, "the value is a JSON list, not an object"),
    (b'{"name": "a"}', None, "required property 'id' is missing"),
    (b'{"id": null}', None, "required property 'id' is null"),
    (b'{"id": true}', None, "property 'id': expected integer, got true"),
    (b'{"id": 1.5}', None, "property 'id': expected integer"),
    (b'{"id": 99999999999999999999}', None, "property 'id': expected integer"),
    (b'{"id": 1, "name": 3}', None, "property 'name': expected string, got 3"),
])
def test_a_value_against_the_schema(value, row, error):
    got_row, got_error = parse_value(value, parse_value_schema(SCHEMA))
    assert got_row == row
    assert (got_error is None) if error is None else got_error.startswith(error)


def test_additional_properties_false_sends_other_properties_to_the_dead_letter_table():
    schema = parse_value_schema(json.dumps({"type": "object", "properties": {"a": {"type": "boolean"}},
                                            "additionalProperties": False}))
    assert parse_value(b'{"a": true}', schema) == ({"a": True}, None)
    assert parse_value(b'{"a": true, "b": 1}', schema)[1] == ("property 'b' is not in the schema "
                                                               "(additionalProperties is false)")


def _writer(tmp_path):
    store = FsObjectStore(tmp_path / "remote")
    store.root.mkdir()
    return TableWriter(store, TableCatalog(table_settings(store, {})), tmp_path / "staging"), store


def _commit(tmp_path, writer, mode, start=10, end=21, schema=SCHEMA, segment_id=None):
    data, aborted = _segment()
    log = tmp_path / f"{start:020d}.log"
    log.write_bytes(data)
    seg = SegmentCommit("orders.v1", 0, segment_id or uuid.uuid4(), start, end, log, aborted, mode, schema)
    writer.commit_segment(seg)
    return seg


def _rows(writer, dead_letter=False):
    ns = "tierlog_dead_letter" if dead_letter else "tierlog"
    return writer.catalog.catalog.load_table((ns, "orders.v1")).scan().to_arrow().sort_by("offset")


def test_value_json_rows_and_dead_letters_read_by_pyiceberg_and_duckdb(tmp_path):
    writer, _store = _writer(tmp_path)
    _commit(tmp_path, writer, VALUE_JSON)
    main, dead = _rows(writer), _rows(writer, dead_letter=True)
    assert main.column("offset").to_pylist() == [10, 11, 13, 17, 18, 20]
    assert main.column("id").to_pylist() == [10, 11, 13, 17, 18, 20]
    assert main.column("name").to_pylist()[0] == "n10"
    assert main.column("headers").to_pylist()[0] == [{"key": "h", "value": b"v10"}]
    assert dead.column("offset").to_pylist() == [12, 21]
    assert dead.column("value").to_pylist() == [b"{not json", b'{"name": "x"}']
    assert dead.column("error").to_pylist()[1] == "required property 'id' is missing"
    table = writer.catalog.catalog.load_table(("tierlog", "orders.v1"))
    assert covered_offsets(table) == {0: 21}
    summary = table.current_snapshot().summary
    assert summary["tierlog.last-offset.0"] == "21" and summary["tierlog.start-offset.0"] == "10"
    files = [t.file.file_path for t in table.scan().plan_files()]
    assert len(files) == 1 and files[0].startswith("file://")
    con = duckdb.connect()
    got = con.execute("SELECT \"offset\", id FROM read_parquet(?) ORDER BY 1",
                      [[f.removeprefix("file://") for f in files]]).fetchall()
    assert got == [(o, o) for o in (10, 11, 13, 17, 18, 20)]
    assert writer.stats.commits == {"orders.v1": 1} and writer.stats.dead_letters == {"orders.v1": 2}


def test_key_value_keeps_every_committed_record_as_bytes(tmp_path):
    writer, _store = _writer(tmp_path)
    _commit(tmp_path, writer, KEY_VALUE, schema="")
    main = _rows(writer)
    assert main.column("offset").to_pylist() == [10, 11, 12, 13, 17, 18, 20, 21]
    assert main.column("value").to_pylist()[2] == b"{not json"
    assert main.column("timestamp_type").to_pylist() == [0] * 8
    assert main.column("partition").to_pylist() == [0] * 8


def test_a_retry_or_a_new_leaders_overlapping_segment_adds_only_what_is_not_covered(tmp_path):
    writer, _store = _writer(tmp_path)
    _commit(tmp_path, writer, VALUE_JSON, start=10, end=17)
    _commit(tmp_path, writer, VALUE_JSON, start=10, end=17)       # the same offsets again: nothing added
    _commit(tmp_path, writer, VALUE_JSON, start=10, end=21)       # a new leader's segment from 10: 18.. only
    assert _rows(writer).column("offset").to_pylist() == [10, 11, 13, 17, 18, 20]
    assert _rows(writer, dead_letter=True).column("offset").to_pylist() == [12, 21]
    table = writer.catalog.catalog.load_table(("tierlog", "orders.v1"))
    assert covered_offsets(table) == {0: 21}
    assert writer.stats.commits == {"orders.v1": 2}


def test_a_crash_between_the_dead_letter_and_the_table_commit_is_repaired_by_the_retry(tmp_path, monkeypatch):
    writer, _store = _writer(tmp_path)
    from tierlog.tiered.table import writer as writer_module
    real = writer_module._append
    calls = []

    def crash_on_main(table, topic, pending):
        calls.append(table.name()[0])
        if table.name()[0] == "tierlog":
            raise OSError("killed")
        return real(table, topic, pending)
    monkeypatch.setattr(writer_module, "_append", crash_on_main)
    with pytest.raises(RemoteStorageError, match="table commit of \\[10, 21\\] failed: OSError: killed"):
        _commit(tmp_path, writer, VALUE_JSON)
    monkeypatch.setattr(writer_module, "_append", real)
    _commit(tmp_path, writer, VALUE_JSON)
    assert _rows(writer).column("offset").to_pylist() == [10, 11, 13, 17, 18, 20]
    assert _rows(writer, dead_letter=True).column("offset").to_pylist() == [12, 21]
    assert list((tmp_path / "staging").iterdir()) == []


def test_adding_a_property_evolves_the_table(tmp_path):
    writer, _store = _writer(tmp_path)
    _commit(tmp_path, writer, VALUE_JSON, start=10, end=13)
    wider = json.dumps({"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                                         "score": {"type": "number"}}, "required": ["id"]})
    _commit(tmp_path, writer, VALUE_JSON, start=14, end=21, schema=wider)
    main = _rows(writer)
    assert main.column("offset").to_pylist() == [10, 11, 13, 17, 18, 20]
    assert main.column("score").to_pylist() == [None] * 6


def test_s3_without_a_catalog_uri_is_refused_with_the_setting_named():
    class S3Like:
        def describe(self):
            return "s3://bucket/prefix/"
    with pytest.raises(RemoteStorageError, match="tierlog.table.catalog.uri is required for tables on s3://"):
        table_settings(S3Like(), {})


def test_catalog_properties_pass_through_and_an_unreachable_rest_catalog_is_one_line(tmp_path):
    import socket
    store = FsObjectStore(tmp_path / "remote")
    store.root.mkdir()
    with socket.socket() as s:                  # a port nothing listens on: a real connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = {"tierlog.table.catalog.type": "rest", "tierlog.table.catalog.uri": f"http://127.0.0.1:{port}",
              "tierlog.table.catalog.credential": "client:secret", "tierlog.table.catalog.warehouse": "prod",
              "tierlog.table.catalog.header.X-Iceberg-Access-Delegation": "vended-credentials"}
    settings = table_settings(store, config)
    assert settings.catalog["credential"] == "client:secret" and settings.catalog["warehouse"] == "prod"
    assert settings.catalog["header.X-Iceberg-Access-Delegation"] == "vended-credentials"
    assert settings.catalog["type"] == "rest" and "tierlog.table.catalog.type" not in settings.catalog
    with pytest.raises(RemoteStorageError) as caught:
        _ = TableCatalog(settings).catalog
    message = str(caught.value)
    assert message.startswith(f"table catalog (tierlog.table.catalog.type=rest, tierlog.table.catalog.uri="
                              f"http://127.0.0.1:{port}): ") and "\n" not in message


def test_the_cli_lists_describes_and_queries_the_tables(tmp_path, capsys):
    from tierlog.cli.main import main
    writer, store = _writer(tmp_path)
    _commit(tmp_path, writer, VALUE_JSON)
    where = ["--storage", str(store.root), "--json"]
    assert main(["table", "ls", *where]) == 0
    tables = json.loads(capsys.readouterr().out)["tables"]
    assert [(t["topic"], t["kind"], t["rows"], t["covered"]) for t in tables] == [
        ("orders.v1", "table", 6, {"0": 21}), ("orders.v1", "dead-letter", 2, {"0": 21})]
    assert main(["table", "describe", "orders.v1", *where]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in info["columns"]][-2:] == ["id", "name"]
    assert info["partitions"] == [{"partition": 0, "last_offset": 21, "rows": 6, "data_files": 1}]
    assert main(["table", "query", "orders.v1", 'SELECT "offset", key, name FROM t WHERE id > 15 ORDER BY 1',
                 *where]) == 0
    assert json.loads(capsys.readouterr().out) == {"columns": ["offset", "key", "name"],
                                                   "rows": [[17, "k17", "n17"], [18, "k18", "n18"],
                                                            [20, "k20", "n20"]]}
    assert main(["table", "query", "orders.v1", 'SELECT error FROM t ORDER BY "offset"', "--dead-letter",
                 *where]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][1] == ["required property 'id' is missing"]
    assert main(["table", "query", "nope", *where]) == 1
    assert "no table of topic 'nope'" in capsys.readouterr().err
    assert main(["table", "query", "orders.v1", "SELECT nope FROM t", *where]) == 1
    assert capsys.readouterr().err.startswith("tierlog: error: query: Binder Error")
    assert main(["table", "ls", "--storage", str(tmp_path)]) == 1
    assert "no tables in" in capsys.readouterr().err


def test_a_namespace_of_several_levels_holds_both_tables_and_the_cli_takes_it_with_set(tmp_path, capsys):
    from tierlog.cli.main import main
    store = FsObjectStore(tmp_path / "remote")
    store.root.mkdir()
    settings = table_settings(store, {"tierlog.table.namespace": "bronze.tierlog"})
    assert (settings.namespace, settings.dead_letter_namespace) == (("bronze", "tierlog"), ("bronze", "tierlog_dead_letter"))
    assert settings.chooses_locations            # a SQL catalog's tables are where tierlog puts them
    writer = TableWriter(store, TableCatalog(settings), tmp_path / "staging")
    _commit(tmp_path, writer, VALUE_JSON)
    table = writer.catalog.catalog.load_table(("bronze", "tierlog", "orders.v1"))
    assert covered_offsets(table) == {0: 21} and table.location().endswith("/tierlog-tables/topics/orders.v1")
    assert writer.catalog.list_tables() == [("bronze", "tierlog", "orders.v1"),
                                            ("bronze", "tierlog_dead_letter", "orders.v1")]
    where = ["--storage", str(store.root), "--json"]
    assert main(["table", "ls", *where, "--set", "tierlog.table.namespace=bronze.tierlog"]) == 0
    assert [(t["kind"], t["rows"]) for t in json.loads(capsys.readouterr().out)["tables"]] == [
        ("table", 6), ("dead-letter", 2)]
    assert main(["table", "ls", *where]) == 0            # the default namespace has none
    assert json.loads(capsys.readouterr().out)["tables"] == []
    assert main(["table", "ls", *where, "--set", "segment.bytes=1"]) == 1
    assert "--set takes rsm.config.storage.*, tierlog.table.catalog.* and tierlog.table.namespace" in \
        capsys.readouterr().err
    with pytest.raises(RemoteStorageError, match="tierlog.table.namespace must be namespace levels"):
        table_settings(store, {"tierlog.table.namespace": "bronze..x"})
    assert not table_settings(store, {"tierlog.table.catalog.type": "rest",
                                      "tierlog.table.catalog.uri": "http://catalog"}).chooses_locations


def test_on_s3_the_parquet_files_go_through_the_store_and_pyiceberg_reads_them_back(s3_store, s3_settings, tmp_path,
                                                                                     monkeypatch):
    monkeypatch.setenv("AWS_REGION", s3_settings.region)
    from tierlog.tiered.table.catalog import s3_io
    settings = table_settings(s3_store, {"tierlog.table.catalog.uri": f"sqlite:///{tmp_path / 'catalog.db'}"},
                              s3_io(s3_store))
    writer = TableWriter(s3_store, TableCatalog(settings), tmp_path / "staging")
    _commit(tmp_path, writer, VALUE_JSON)
    assert _rows(writer).column("offset").to_pylist() == [10, 11, 13, 17, 18, 20]
    assert _rows(writer, dead_letter=True).column("offset").to_pylist() == [12, 21]
    keys = s3_store.list_keys("tierlog-tables/")
    assert sum(k.endswith(".parquet") for k in keys) == 2
    assert any(k.startswith("tierlog-tables/topics/orders.v1/metadata/") for k in keys)
    table = writer.catalog.catalog.load_table(("tierlog", "orders.v1"))
    assert table.location() == f"s3://{s3_settings.bucket}/cluster-a/tierlog-tables/topics/orders.v1"


def test_backfill_takes_the_lineages_finished_segments_above_the_covered_offset_oldest_first():
    from tierlog.storage.txn_index import encode_entry
    from tierlog.tiered import RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition
    from tierlog.tiered.table.backfill import aborted_in, backfill_due
    tip = TopicIdPartition(bytes(16), "orders", 0)

    def seg(start, end, epoch=0):
        return RemoteLogSegmentMetadata(RemoteLogSegmentId(tip, uuid.uuid4().bytes), start, end, NOW, 1, NOW,
                                        ((epoch, start),), 100)
    a, b, c, zombie = seg(0, 99), seg(100, 199), seg(200, 299), seg(100, 150, epoch=7)
    entries = [(0, 0)]
    assert backfill_due([c, a, b, zombie], -1, entries, 1000) == [a, b, c]
    assert backfill_due([c, a, b], 150, entries, 1000) == [b, c]
    assert backfill_due([a, b, c], 299, entries, 1000) == []
    t1, t2 = AbortedTxn(5, 10, 20, 10), AbortedTxn(6, 30, 40, 30)
    assert aborted_in([encode_entry(t1), encode_entry(t1) + encode_entry(t2)], [t2]) == [t1, t2]


def test_expiry_deletes_the_rows_below_the_log_start_from_both_tables_once(tmp_path):
    writer, _store = _writer(tmp_path)
    _commit(tmp_path, writer, VALUE_JSON, start=10, end=13)
    _commit(tmp_path, writer, VALUE_JSON, start=14, end=21)
    assert writer.expire("orders.v1", 0, 18, VALUE_JSON, SCHEMA) == 2
    assert _rows(writer).column("offset").to_pylist() == [18, 20]     # the second file rewritten from 18
    assert _rows(writer, dead_letter=True).column("offset").to_pylist() == [21]
    assert writer.expire("orders.v1", 0, 18, VALUE_JSON, SCHEMA) == 0      # recorded: nothing to do again
    table = writer.catalog.catalog.load_table(("tierlog", "orders.v1"))
    assert table.properties["tierlog.log-start-offset.0"] == "18" and covered_offsets(table) == {0: 21}
    assert table.current_snapshot().summary["tierlog.log-start-offset.0"] == "18"


def test_a_broker_without_the_table_extra_fails_the_table_topics_upload_with_one_line(tmp_path, monkeypatch):
    from tierlog import extras
    from tierlog.broker.remote.tables import TableCommits
    monkeypatch.setattr(extras.importlib.util, "find_spec", lambda name: None)
    tables = TableCommits(FsObjectStore(tmp_path), {}, tmp_path / "staging")
    with pytest.raises(RemoteStorageError) as err:
        tables.covered("orders", 0, {"tierlog.table.mode": "key_value", "tierlog.table.value.schema": ""})
    assert str(err.value) == ("tierlog.table.mode needs pyiceberg, which is not installed: "
                              "pip install 'tierlog[table]'")
