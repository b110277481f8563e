"""A tiered topic as an Iceberg table, over sockets: 1 controller + 1 broker, fs remote storage.

confluent-kafka produces JSON records (every 40th malformed, one lacking its required id),
a committed and an aborted transaction, to a value_json topic whose copies are held back
(``remote.log.copy.disable``); then copying is turned on. The broker's first table commit
is killed with SIGKILL after its Parquet file is in the store and before the Iceberg
commit, and (after a restart) its next one right after the commit and before the upload
counts as done: each time the broker is restarted. Then the table, read by pyiceberg's scan
and by DuckDB over the Parquet files pyiceberg plans, holds exactly what a read_committed
consumer reads from offset 0 up to the highest tiered offset: same offsets, same values,
no offset twice, malformed records only in the dead-letter table, aborted ones nowhere.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
import uuid

import duckdb
import pytest
from cluster import Cluster, running, wait_for
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from tiered import LATEST_TIERED, fs_props, offsets

from tierlog.broker.remote.copy_task import TABLE_PIPELINE_SEGMENTS
from tierlog.tiered import FsObjectStore
from tierlog.tiered.table.catalog import TableCatalog, covered_offsets, table_settings
from tierlog.tiered.table.writer import CRASH_DIR_ENV

pytestmark = pytest.mark.integration

TOPIC = "orders.json"
RECORDS, PAD = 1500, "p" * 2000        # ~3 MiB: a few 1 MiB segments
SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "pad": {"type": "string"}}, "required": ["id"]}
CONFIG = {"remote.storage.enable": "true", "segment.bytes": str(1024 * 1024), "local.retention.bytes": "1",
          "remote.log.copy.disable": "true", "tierlog.table.mode": "value_json",
          "tierlog.table.value.schema": json.dumps(SCHEMA)}


def _value(i: int) -> bytes:
    if i % 40 == 7:
        return b'{"id": %d, "pad": ' % i        # cut short: not JSON
    if i == 100:
        return json.dumps({"pad": "no id"}).encode()
    return json.dumps({"id": i, "pad": PAD}).encode()


def _malformed(value: bytes) -> bool:
    try:
        return "id" not in json.loads(value)
    except ValueError:
        return True


def _produce(boot: str) -> None:
    p = Producer({"bootstrap.servers": boot, "linger.ms": 5, "enable.idempotence": True})
    for i in range(RECORDS // 2):
        p.produce(TOPIC, _value(i), key=b"k%d" % i, partition=0, headers=[("n", b"%d" % i)])
    assert p.flush(60) == 0
    t = Producer({"bootstrap.servers": boot, "transactional.id": f"tables-{uuid.uuid4().hex[:6]}"})
    t.init_transactions(30)
    for commit, base in ((False, 100_000), (True, 200_000)):
        t.begin_transaction()
        for i in range(base, base + 20):
            t.produce(TOPIC, _value(i), partition=0)
        if commit:
            t.commit_transaction(30)
        else:
            assert t.flush(30) == 0
            t.abort_transaction(30)
    for i in range(RECORDS // 2, RECORDS):
        p.produce(TOPIC, _value(i), key=b"k%d" % i, partition=0)
    assert p.flush(60) == 0


def _consume(boot: str, end: int, topic: str = TOPIC) -> dict[int, bytes]:
    """offset -> value of every record a read_committed consumer gets from offset 0 below ``end``."""
    c = Consumer({"bootstrap.servers": boot, "group.id": f"t-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, 0, 0)])
    out: dict[int, bytes] = {}
    try:
        def read():
            m = c.poll(0.5)
            if m is not None and not m.error() and m.offset() < end:
                out[m.offset()] = m.value()
            return m is not None and not m.error() and m.offset() >= end - 1 or None
        wait_for(read, 120, f"the records below {end}", interval_s=0)
        return out
    finally:
        c.close()


def _alter(admin, topic: str, **configs: str) -> None:
    resource = ConfigResource("TOPIC", topic, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    admin.incremental_alter_configs([resource])[resource].result(20)


def _wait_crashed(broker, point: str, crash_dir) -> None:
    wait_for(lambda: not broker.alive(), 120, f"the broker killed at {point}")
    assert (crash_dir / point).exists(), broker.log_tail()


def _restart_after_crash(broker, point: str, crash_dir) -> None:
    _wait_crashed(broker, point, crash_dir)
    broker.start()


def test_the_table_matches_the_log_to_the_offset_across_crashes(tmp_path, monkeypatch):
    remote, crash_dir = tmp_path / "remote-storage", tmp_path / "crashes"
    monkeypatch.setenv(CRASH_DIR_ENV, str(crash_dir))
    props = {**fs_props(remote), "transaction.state.log.num.partitions": "1",
             "metrics.prometheus.listener": "127.0.0.1:0"}
    with running(Cluster(tmp_path, controllers=1, brokers=1, props=props)) as cluster:
        broker = cluster.brokers[0]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1, config=CONFIG)], request_timeout=15)[TOPIC].result(20)
        _produce(cluster.bootstrap)
        _alter(admin, TOPIC, **{"remote.log.copy.disable": "false"})

        _restart_after_crash(broker, "before-commit", crash_dir)
        _restart_after_crash(broker, "after-commit", crash_dir)
        tiered = wait_for(lambda: (o := offsets(broker, TOPIC, 0, LATEST_TIERED)) is not None and o > RECORDS // 2 and o,
                          120, "most of the topic uploaded", interval_s=0.5)

        # a client of its own after the two kill -9s: the first one's connection may still sit in
        # librdkafka's reconnect backoff (up to reconnect.backoff.max.ms, 10 s), past an alter's 20 s
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        catalog = TableCatalog(table_settings(FsObjectStore(remote), {})).catalog
        main = catalog.load_table(("tierlog", TOPIC))
        dead = catalog.load_table(("tierlog_dead_letter", TOPIC))
        assert covered_offsets(main)[0] >= tiered and covered_offsets(dead)[0] >= tiered
        covered = covered_offsets(main)[0]
        log = _consume(cluster.bootstrap, covered + 1)
        metrics = urllib.request.urlopen(f"http://{broker.announced['metrics']}/metrics", timeout=10).read().decode()
        notes = _evolve_schema(admin, cluster, catalog, covered)
        final = catalog.load_table(("tierlog", TOPIC)).scan().to_arrow().num_rows

    rows = main.scan().to_arrow().sort_by("offset")
    table = dict(zip(rows.column("offset").to_pylist(), rows.column("id").to_pylist(), strict=True))
    assert len(table) == rows.num_rows, "an offset twice in the table"
    dead_rows = dead.scan().to_arrow().sort_by("offset")
    # the dead-letter table commits first, so it may already hold a later segment's rows than main
    dead_letters = {o: v for o, v in zip(dead_rows.column("offset").to_pylist(), dead_rows.column("value").to_pylist(),
                                         strict=True) if o <= covered}
    assert len(set(dead_rows.column("offset").to_pylist())) == dead_rows.num_rows, "an offset twice in the dead letters"

    good = {o: json.loads(v)["id"] for o, v in log.items() if o not in dead_letters}
    assert table == good
    assert set(table) | set(dead_letters) == set(log), "the table and its dead letters are what the log holds"
    assert all(dead_letters[o] == log[o] for o in dead_letters)
    assert set(dead_letters) == {o for o, v in log.items() if _malformed(v)} and len(dead_letters) > 20
    ids = set(table.values()) | {int(m[1]) for v in dead_letters.values() if (m := re.match(rb'{"id": (\d+)', v))}
    assert ids >= set(range(200_000, 200_020)), "the committed transaction is in"
    assert not ids & set(range(100_000, 100_020)), "the aborted one is not"

    files = [t.file.file_path.removeprefix("file://") for t in main.scan().plan_files()]
    duck = duckdb.connect().execute('SELECT "offset", id FROM read_parquet(?) ORDER BY 1', [files]).fetchall()
    assert dict(duck) == table
    assert 'tierlog_table_commits_total{topic="orders.json"}' in metrics
    assert 'tierlog_table_lag_offsets{partition="0",topic="orders.json"} 0.0' in metrics
    counted = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "table", "query", TOPIC,
                              'SELECT count(*), count(DISTINCT "offset") FROM t', "--storage", str(remote), "--json"],
                             capture_output=True, text=True, timeout=120, check=True)
    [[count, distinct]] = json.loads(counted.stdout)["rows"]
    later = catalog.load_table(("tierlog", TOPIC)).scan().to_arrow().num_rows
    # uploads go on meanwhile: the CLI saw a snapshot between the two scans, no offset twice
    assert count == distinct and final <= count <= later
    assert set(notes) == {"later"}, "the rows committed after the new property have it"


def _evolve_schema(admin, cluster, catalog, covered: int) -> list[str]:
    """A type change is refused (INVALID_CONFIG); an added property evolves the table: the records
    uploaded from then on have the column, the older ones null (the new records' notes)."""
    changed = {**SCHEMA, "properties": {**SCHEMA["properties"], "id": {"type": "string"}}}
    with pytest.raises(KafkaException, match="property 'id' changes type integer -> string"):
        _alter(admin, TOPIC, **{"tierlog.table.value.schema": json.dumps(changed)})
    wider = {**SCHEMA, "properties": {**SCHEMA["properties"], "note": {"type": "string"}}}
    _alter(admin, TOPIC, **{"tierlog.table.value.schema": json.dumps(wider)})
    p = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    delivered: list[int] = []
    # about 2.9 MB: only the active segment (at most segment.bytes, 1 MiB) stays local, so at least
    # ~1.8 MB of these records are in closed segments, uploaded and committed, wherever librdkafka's
    # batches made the segments roll (700 records, 1.4 MB, could all sit in the active one)
    for i in range(1400):
        p.produce(TOPIC, json.dumps({"id": 300_000 + i, "pad": PAD, "note": "later"}).encode(), partition=0,
                  on_delivery=lambda err, m: delivered.append(m.offset()))
    assert p.flush(60) == 0
    first = min(delivered)
    wait_for(lambda: covered_offsets(catalog.load_table(("tierlog", TOPIC)))[0] > first + 300, 120,
             "the new records committed", interval_s=0.5)
    rows = catalog.load_table(("tierlog", TOPIC)).scan(row_filter=f"offset > {covered}").to_arrow()
    notes = dict(zip(rows.column("offset").to_pylist(), rows.column("note").to_pylist(), strict=True))
    assert all(n is None for o, n in notes.items() if o < first) and len(notes) > 300
    return [n for o, n in notes.items() if o >= first]


def test_turning_the_table_on_backfills_the_remote_segments_uploaded_before(tmp_path):
    """A tiered topic without a table: records uploaded, then key_value turned on (AlterConfigs): the
    leader commits the remote segments to the new table, oldest first, before any new upload. Then
    DeleteRecords moves the log start: the rows below it leave the table."""
    remote, topic = tmp_path / "remote-storage", "backfilled"
    with running(Cluster(tmp_path, controllers=1, brokers=1, props=fs_props(remote))) as cluster:
        broker = cluster.brokers[0]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        config = {"remote.storage.enable": "true", "segment.bytes": str(1024 * 1024), "local.retention.bytes": "1"}
        admin.create_topics([NewTopic(topic, 1, 1, config=config)], request_timeout=15)[topic].result(20)
        p = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
        for i in range(1200):
            p.produce(topic, b"%d:" % i + b"v" * 2000, partition=0)
        assert p.flush(60) == 0
        tiered = wait_for(lambda: (o := offsets(broker, topic, 0, LATEST_TIERED)) is not None and o > 900 and o,
                          120, "two segments uploaded", interval_s=0.5)
        _alter(admin, topic, **{"tierlog.table.mode": "key_value"})
        catalog = TableCatalog(table_settings(FsObjectStore(remote), {}))
        wait_for(lambda: (t := _load(catalog, topic)) is not None and covered_offsets(t).get(0, -1) >= tiered, 120,
                 "the table backfilled", interval_s=0.5)
        log = _consume(cluster.bootstrap, tiered + 1, topic)
        rows = catalog.load(topic).scan().to_arrow().sort_by("offset")
        values = dict(zip(rows.column("offset").to_pylist(), rows.column("value").to_pylist(), strict=True))
        assert len(values) == rows.num_rows
        assert {o: v for o, v in values.items() if o <= tiered} == log
        described = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "topics", "describe", topic, "--json",
                                    "--bootstrap-server", cluster.bootstrap], capture_output=True, text=True,
                                   timeout=120, check=True)
        [partition] = json.loads(described.stdout)[0]["partitions"]
        covered = covered_offsets(catalog.load(topic))[0]        # uploads go on: bounded by the reads around it
        assert tiered <= partition["table_offset"] <= covered

        admin.delete_records([TopicPartition(topic, 0, 300)])[TopicPartition(topic, 0, 300)].result(20)
        wait_for(lambda: catalog.load(topic).properties.get("tierlog.log-start-offset.0") == "300", 60,
                 "the table cut at the new log start", interval_s=0.5)
    kept = catalog.load(topic).scan().to_arrow().column("offset").to_pylist()
    assert min(kept) == 300 and sorted(kept) == [o for o in sorted(values) if o >= 300]


def _load(catalog, topic):
    try:
        return catalog.load(topic)
    except Exception:       # noqa: BLE001 -- the broker creates the catalog file meanwhile
        return None


def test_upkeep_deletes_a_crashed_attempts_file_and_keep_expired_keeps_the_rows(tmp_path, monkeypatch):
    """kill -9 between the Parquet put and the commit leaves an object no snapshot references; after
    the restart the leader's upkeep (every second here, snapshots kept 0 ms) deletes it and expires the
    old snapshots. With tierlog.table.keep.expired=true, DeleteRecords deletes the first remote segment
    and the table keeps its rows."""
    remote, crash_dir, topic = tmp_path / "remote-storage", tmp_path / "crashes", "kept"
    crash_dir.mkdir()
    (crash_dir / "after-commit").write_text("not this one")
    monkeypatch.setenv(CRASH_DIR_ENV, str(crash_dir))
    props = {**fs_props(remote), "tierlog.table.maintenance.interval.ms": "1000",
             "tierlog.table.snapshot.retention.ms": "0"}
    data = remote / "tierlog-tables" / "topics" / topic / "data" / "partition=0"
    with running(Cluster(tmp_path, controllers=1, brokers=1, props=props)) as cluster:
        broker = cluster.brokers[0]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        config = {"remote.storage.enable": "true", "segment.bytes": str(1024 * 1024), "local.retention.bytes": "1",
                  "tierlog.table.mode": "key_value", "tierlog.table.keep.expired": "true"}
        admin.create_topics([NewTopic(topic, 1, 1, config=config)], request_timeout=15)[topic].result(20)
        p = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
        for i in range(1500):
            p.produce(topic, b"%d:" % i + b"v" * 2000, partition=0)
        assert p.flush(60) == 0
        _wait_crashed(broker, "before-commit", crash_dir)
        # read while it is down (the restarted broker soon puts files of its own): the crashed attempt's
        # file, and the next segment's when the pipeline had put it too (two uploads of a partition at once)
        crashed = {f.name for f in data.glob("*.parquet")}
        assert 1 <= len(crashed) <= TABLE_PIPELINE_SEGMENTS, crashed
        broker.start()
        catalog = TableCatalog(table_settings(FsObjectStore(remote), {}))
        tiered = wait_for(lambda: (o := offsets(broker, topic, 0, LATEST_TIERED)) is not None and o > 900 and o,
                          120, "two segments uploaded", interval_s=0.5)
        wait_for(lambda: not crashed & {f.name for f in data.glob("*.parquet")} and
                 len((t := catalog.load(topic)).snapshots()) == 1 and covered_offsets(t)[0] >= tiered, 120,
                 "the crashed attempt's file deleted and old snapshots expired", interval_s=0.5)
        referenced = {p.rsplit("/", 1)[1] for p in catalog.load(topic).inspect.all_files().column("file_path").to_pylist()}
        assert {f.name for f in data.glob("*.parquet")} == referenced

        second = min(o for o in catalog.load(topic).scan().to_arrow().column("offset").to_pylist() if o > 0
                     and o in _segment_starts(remote, topic))
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})     # a fresh client after the kill -9
        admin.delete_records([TopicPartition(topic, 0, second)])[TopicPartition(topic, 0, second)].result(20)
        wait_for(lambda: 0 not in _segment_starts(remote, topic), 60, "the first remote segment deleted",
                 interval_s=0.5)
    table = catalog.load(topic)
    kept = table.scan().to_arrow().column("offset").to_pylist()
    assert min(kept) == 0 and len(kept) == len(set(kept)) and "tierlog.log-start-offset.0" not in table.properties


def _segment_starts(remote, topic) -> set[int]:
    """The start offsets of the topic's finished remote segments (the store's listing)."""
    from tierlog.tiered import list_partitions
    store = FsObjectStore(remote)
    return {s.metadata.start_offset for p in list_partitions(store, topic) for s in p.segments}


def test_on_a_moto_s3_store_the_table_matches_the_log(tmp_path, monkeypatch):
    """The store is a moto S3 server process over sockets, the catalog a SQLite file every broker here
    reaches (S3 has no default catalog): the broker's commits put Parquet and Iceberg metadata in the
    bucket, and pyiceberg's scan through S3 reads what a consumer reads."""
    from tiered import TIERED_BROKER, MotoServer, with_moto_credentials

    from tierlog.tiered import object_store_from_config
    from tierlog.tiered.table.catalog import s3_io

    with_moto_credentials(monkeypatch)
    topic, uri = "on-s3", f"sqlite:///{tmp_path / 'catalog.db'}"
    with MotoServer(tmp_path / "moto") as moto:
        props = {**TIERED_BROKER, **moto.settings(), "tierlog.table.catalog.uri": uri}
        with running(Cluster(tmp_path, controllers=1, brokers=1, props=props)) as cluster:
            broker = cluster.brokers[0]
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            config = {"remote.storage.enable": "true", "segment.bytes": str(1024 * 1024),
                      "local.retention.bytes": "1", "tierlog.table.mode": "key_value"}
            admin.create_topics([NewTopic(topic, 1, 1, config=config)], request_timeout=15)[topic].result(20)
            p = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
            for i in range(1200):
                p.produce(topic, b"%d:" % i + b"s" * 2000, partition=0)
            assert p.flush(60) == 0
            tiered = wait_for(lambda: (o := offsets(broker, topic, 0, LATEST_TIERED)) is not None and o > 900 and o,
                              120, "two segments uploaded", interval_s=0.5)
            store = object_store_from_config(moto.settings())
            catalog = TableCatalog(table_settings(store, {"tierlog.table.catalog.uri": uri}, s3_io(store)))
            table = wait_for(lambda: (t := _load(catalog, topic)) is not None and covered_offsets(t).get(0, -1) >= tiered
                             and t, 60, "the table committed", interval_s=0.5)
            log = _consume(cluster.bootstrap, tiered + 1, topic)
            keys = store.list_keys(f"tierlog-tables/topics/{topic}/")
        rows = table.scan().to_arrow()            # through S3, with the moto server still up
    values = dict(zip(rows.column("offset").to_pylist(), rows.column("value").to_pylist(), strict=True))
    assert len(values) == rows.num_rows and {o: v for o, v in values.items() if o <= tiered} == log
    assert table.location().startswith(f"s3://{moto.bucket}/cluster/tierlog-tables/")
    assert any(k.endswith(".parquet") for k in keys) and any(k.endswith(".metadata.json") for k in keys)
