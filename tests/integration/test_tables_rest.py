"""A tiered topic's table in a REST catalog: a real Iceberg REST catalog server over HTTP on 127.0.0.1.

The server (tests/support/rest_catalog.py) is Lakana's, run from the separate virtualenv
``.venv-rest`` that ``./dev setup`` makes; its warehouse is ``tierlog-tables/`` of the brokers'
fs remote store, its token and prefix go to the brokers as ``tierlog.table.catalog.<property>``,
and the tables' namespace is ``bronze.tierlog`` (``tierlog.table.namespace``: Lakana takes
tables only under ``bronze``, ``silver`` or ``gold``).

confluent-kafka produces to a two-partition key_value topic whose copies are held back;
then copying is turned on, and the broker is killed with SIGKILL once after a segment's
Parquet file is in the store and before the REST commit, and once after the commit and
before the upload counts as done, each time restarted. Then a pyiceberg RestCatalog scan
and ``tierlog table query`` (the CLI over the same catalog properties) hold exactly what a
read_committed consumer reads from offset 0 up to each partition's covered offset, offset
for offset (``table ls`` and ``describe`` agree on rows and covered offsets); each snapshot's
summary carries the last offset per partition; the Spark
table read's planning finds the table through the same properties. And the writer's
retention cut commits through the server, whose refusal of a snapshot expiry is one line.
"""
from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster import Cluster, running, wait_for
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from rest_catalog import ENVIRONMENT, NAMESPACE, RestCatalog, rest_catalog_server
from tiered import LATEST_TIERED, fs_props, offsets

from tierlog.tiered.table.catalog import covered_offsets
from tierlog.tiered.table.writer import CRASH_DIR_ENV

pytestmark = pytest.mark.integration

TOPIC, PARTITIONS = "orders", 2
RECORDS, PAD = 1400, "p" * 2000           # per partition, ~2.8 MiB: a few 1 MiB segments each
CONFIG = {"remote.storage.enable": "true", "segment.bytes": str(1024 * 1024), "local.retention.bytes": "1",
          "remote.log.copy.disable": "true", "tierlog.table.mode": "key_value"}


@pytest.fixture(scope="module")
def rest_catalog(tmp_path_factory) -> Iterator[tuple[RestCatalog, Path]]:
    """The REST catalog server whose warehouse is tierlog-tables/ of the remote store, and the store's root
    (the module's tests use topics of their own)."""
    root = tmp_path_factory.mktemp("rest")
    remote = root / "remote-storage"
    with rest_catalog_server(root / "rest-catalog", remote / "tierlog-tables") as catalog:
        yield catalog, remote


def _produce(boot: str) -> None:
    p = Producer({"bootstrap.servers": boot, "linger.ms": 5, "enable.idempotence": True})
    for i in range(RECORDS):
        for part in range(PARTITIONS):
            p.produce(TOPIC, b"%d-%d-%s" % (part, i, PAD.encode()), key=b"k%d" % i, partition=part,
                      headers=[("n", b"%d" % i)])
    assert p.flush(60) == 0


def _consume(boot: str, part: int, end: int) -> dict[int, tuple[bytes | None, bytes | None]]:
    """offset -> (key, value) of every record a read_committed consumer gets from offset 0 to ``end``."""
    c = Consumer({"bootstrap.servers": boot, "group.id": f"t-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    c.assign([TopicPartition(TOPIC, part, 0)])
    out: dict[int, tuple[bytes | None, bytes | None]] = {}
    try:
        def read():
            m = c.poll(0.5)
            if m is not None and not m.error() and m.offset() <= end:
                out[m.offset()] = (m.key(), m.value())
            return m is not None and not m.error() and m.offset() >= end or None
        wait_for(read, 60, f"partition {part}'s records up to {end}", interval_s=0)
        return out
    finally:
        c.close()


def _restart_after_crash(broker, point: str, crash_dir: Path) -> None:
    wait_for(lambda: not broker.alive(), 60, f"the broker killed at {point}")
    assert (crash_dir / point).exists(), broker.log_tail()
    broker.start()


def _cli(rest: RestCatalog, remote: Path, *args: str) -> dict:
    """``tierlog table ARGS --json`` with the REST catalog's settings as the brokers have them."""
    sets = [a for k, v in rest.properties().items() if not k.endswith((".type", ".uri")) for a in ("--set", f"{k}={v}")]
    out = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "table", *args, "--storage", str(remote),
                          "--catalog-type", "rest", "--catalog-uri", rest.uri, *sets, "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_rest_catalog_holds_the_log_to_the_offset_across_crashes(rest_catalog, tmp_path, monkeypatch):
    from pyiceberg.catalog import load_catalog
    rest, remote = rest_catalog
    crash_dir = tmp_path / "crashes"
    monkeypatch.setenv(CRASH_DIR_ENV, str(crash_dir))
    props = {**fs_props(remote), **rest.properties()}
    with running(Cluster(tmp_path, controllers=1, brokers=1, props=props)) as cluster:
        broker = cluster.brokers[0]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, config=CONFIG)], request_timeout=15)[TOPIC].result(20)
        _produce(cluster.bootstrap)
        resource = ConfigResource("TOPIC", TOPIC, incremental_configs=[
            ConfigEntry("remote.log.copy.disable", "false", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(20)

        _restart_after_crash(broker, "before-commit", crash_dir)
        _restart_after_crash(broker, "after-commit", crash_dir)
        catalog = load_catalog("check", type="rest", uri=rest.uri, prefix=ENVIRONMENT, token=rest.token)
        ident = (*NAMESPACE.split("."), TOPIC)
        tiered = {p: wait_for(lambda p=p: (o := offsets(broker, TOPIC, p, LATEST_TIERED)) is not None
                              and o > RECORDS // 2 and o, 60, f"partition {p} mostly uploaded", interval_s=0.5)
                  for p in range(PARTITIONS)}
        covered = wait_for(lambda: (c := covered_offsets(catalog.load_table(ident)))
                           and all(c.get(p, -1) >= tiered[p] for p in range(PARTITIONS)) and c,
                           60, "the table covering what was tiered")
        table = catalog.load_table(ident)
        log = {p: _consume(cluster.bootstrap, p, covered[p]) for p in range(PARTITIONS)}
        described = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "topics", "describe", TOPIC, "--json",
                                    "--bootstrap-server", cluster.bootstrap], capture_output=True, text=True,
                                   timeout=120, check=True)
    # the broker shows the catalog's type, URI and namespace, not its token: the server's refusal is the note
    assert [p["table_offset"] for p in json.loads(described.stdout)[0]["partitions"]] == [None] * PARTITIONS
    assert "table offsets unknown: table catalog (tierlog.table.catalog.type=rest" in described.stderr, described.stderr

    scanned = table.scan(selected_fields=("partition", "offset", "key", "value", "headers")).to_arrow()
    rows = sorted(zip(*(scanned.column(c).to_pylist() for c in ("partition", "offset", "key", "value")), strict=True))
    expected = sorted((p, o, k, v) for p in range(PARTITIONS) for o, (k, v) in log[p].items())
    assert len(rows) == len(set((p, o) for p, o, _, _ in rows)), "an offset twice in the table"
    assert [(p, o) for p, o, _, _ in rows] == [(p, o) for p, o, _, _ in expected]
    assert rows == expected
    assert all(h == [{"key": "n", "value": k[1:]}] for h, k in zip(scanned.column("headers").to_pylist(),
                                                                  scanned.column("key").to_pylist(), strict=True))
    assert table.location().startswith((remote / "tierlog-tables").resolve().as_uri())     # the catalog's choice
    assert not (remote / "tierlog-tables" / "catalog.db").exists()     # no SQLite catalog beside it, from anyone
    summaries = [s.summary.additional_properties for s in table.snapshots()]
    for p in range(PARTITIONS):         # every commit says which offsets it added to which partition
        ends = [int(s[f"tierlog.last-offset.{p}"]) for s in summaries if f"tierlog.last-offset.{p}" in s]
        assert ends and ends == sorted(set(ends)) and ends[-1] == covered[p], summaries

    cli = _cli(rest, remote, "query", TOPIC, 'SELECT "partition", "offset", key, value FROM t ORDER BY 1, 2')
    assert [(part, o, k.encode(), v.encode()) for part, o, k, v in cli["rows"]] == expected
    [listed] = _cli(rest, remote, "ls", "--topic", TOPIC)["tables"]
    assert (listed["kind"], listed["rows"], listed["covered"]) == ("table", len(rows), {str(p): covered[p] for p in covered})
    info = _cli(rest, remote, "describe", TOPIC)
    assert [(p["partition"], p["last_offset"], p["rows"]) for p in info["partitions"]] == [
        (p, covered[p], len(log[p])) for p in range(PARTITIONS)]

    from tierlog.spark.table_read import load_table, table_read_options
    spark_table = load_table(table_read_options({"table": TOPIC, "storage": str(remote), **rest.properties()}))
    assert spark_table.metadata_location == table.metadata_location


def test_the_retention_cut_commits_through_it_and_its_refusal_of_snapshot_expiry_is_one_line(rest_catalog, tmp_path):
    from tierlog.broker.remote.tables import SNAPSHOT_RETENTION, TableCommits
    from tierlog.records import Record, build_batch
    from tierlog.storage.table_config import KEY_VALUE, TABLE_MODE, TABLE_VALUE_SCHEMA
    from tierlog.tiered import FsObjectStore, RemoteStorageError
    from tierlog.tiered.table.catalog import TableCatalog, table_settings
    from tierlog.tiered.table.writer import SegmentCommit, TableWriter
    rest, remote = rest_catalog
    store, topic = FsObjectStore(remote), "kept"
    writer = TableWriter(store, TableCatalog(table_settings(store, rest.properties())), tmp_path / "staging")
    for start in (0, 10):
        log = tmp_path / f"{start}.log"
        log.write_bytes(build_batch([Record(o, 1000 + o, None, b"v%d" % o) for o in range(start, start + 10)],
                                    base_offset=start))
        writer.commit_segment(SegmentCommit(topic, 0, uuid.uuid4(), start, start + 9, log, [], KEY_VALUE))
    assert writer.expire(topic, 0, 15, KEY_VALUE, "") == 1
    table = writer.catalog.load(topic)
    assert sorted(table.scan().to_arrow().column("offset").to_pylist()) == list(range(15, 20))
    assert table.properties["tierlog.log-start-offset.0"] == "15" and covered_offsets(table) == {0: 19}
    # the broker's upkeep, every snapshot old enough to expire: Lakana keeps snapshots for its own maintenance
    upkeep = TableCommits(store, {**rest.properties(), SNAPSHOT_RETENTION: "0"}, tmp_path / "staging")
    with pytest.raises(RemoteStorageError) as refused:
        upkeep.upkeep(topic, 0, {TABLE_MODE: KEY_VALUE, TABLE_VALUE_SCHEMA: ""}, now_ms=2**42)
    assert str(refused.value).startswith("kept-0: table upkeep: ForbiddenError: ") and "\n" not in str(refused.value)
