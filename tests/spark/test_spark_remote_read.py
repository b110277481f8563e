"""Direct remote reads (remoteStorage): rows read straight from the segment objects equal the
rows read through the broker, and the tiered range is still readable with the broker stopped."""
import json
import logging
import time
import urllib.request
import uuid

import pytest
from clients import create_topic, produce_all
from cluster import wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource
from prometheus_client.parser import text_string_to_metric_families
from tiered import (
    LATEST_TIERED,
    TIERED_TOPIC,
    offsets,
)
from tiered_topic import PARTITIONS, RECORDS, TOPIC

from tierlog.spark.remote_store import StoreSpec
from tierlog.spark.source import TierlogDataSource

COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]


def _options(node, **extra):
    return {"kafka.bootstrap.servers": node.bootstrap, "subscribe": TOPIC, "includeHeaders": "true", **extra}


def _rows(spark, options):
    reader = spark.read.format("tierlog")
    for k, v in options.items():
        reader = reader.option(k, v)
    return sorted((tuple(r) for r in reader.load().select(*COLUMNS).collect()), key=lambda r: (r[3], r[4]))


def _plan(options):
    source = TierlogDataSource(options)
    return source.reader(source.schema()).partitions()


def test_direct_read_equals_the_broker_read(spark, tiered_node):
    ends = json.dumps({TOPIC: {str(p): 3900 for p in range(PARTITIONS)}})
    starts = json.dumps({TOPIC: {"0": 5, "1": -2}})
    direct = _options(tiered_node, remoteStorage=str(tiered_node.remote), startingOffsets=starts, endingOffsets=ends)
    plan = _plan(direct)
    remote = [p for p in plan if p.segment is not None]
    tiered = {p: offsets(tiered_node, TOPIC, p, LATEST_TIERED) for p in range(PARTITIONS)}
    assert {p.partition for p in remote} == set(range(PARTITIONS)), plan
    assert all(p.end <= tiered[p.partition] + 1 for p in remote), (plan, tiered)
    assert sum(p.end - p.start for p in plan) == (3900 - 5) + 3900           # every offset once
    assert any(p.segment is None for p in plan), plan                        # the local tail via the broker

    through_broker = _rows(spark, _options(tiered_node, remoteStorage="off", startingOffsets=starts,
                                           endingOffsets=ends))
    assert len(through_broker) == (3900 - 5) + 3900
    assert _rows(spark, direct) == through_broker


def _remote_fetch_bytes(node) -> float:
    """The broker's RemoteFetchBytes for the topic: what it read from remote storage to serve fetches."""
    with urllib.request.urlopen(f"http://{node.announced['metrics']}/metrics", timeout=5) as resp:
        families = text_string_to_metric_families(resp.read().decode())
        return sum(s.value for f in families for s in f.samples
                   if s.name == "kafka_server_brokertopicmetrics_remotefetchbytes_total" and s.labels.get("topic") == TOPIC)


def test_the_broker_shows_where_its_store_is_and_hides_other_plugin_settings(tiered_node):
    admin = AdminClient({"bootstrap.servers": tiered_node.bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    entries = admin.describe_configs([resource])[resource].result(30)
    root = entries["rsm.config.storage.root"]
    assert (root.value, root.is_sensitive, root.is_read_only) == (str(tiered_node.remote), False, True)
    hidden = entries["rlmm.config.example.password"]
    assert (hidden.value, hidden.is_sensitive) == (None, True)


def test_auto_reads_a_tiered_topic_directly_and_others_through_the_brokers(spark, tiered_node):
    tiered = {p: offsets(tiered_node, TOPIC, p, LATEST_TIERED) for p in range(PARTITIONS)}
    ends = json.dumps({TOPIC: {str(p): tiered[p] + 1 for p in range(PARTITIONS)}})
    auto = _options(tiered_node, endingOffsets=ends)                       # remoteStorage=auto: the default
    assert all(p.segment is not None for p in _plan(auto))
    fetched = _remote_fetch_bytes(tiered_node)
    direct = _rows(spark, auto)
    assert _remote_fetch_bytes(tiered_node) == fetched                     # no broker read remote storage
    assert direct == _rows(spark, _options(tiered_node, remoteStorage="off", endingOffsets=ends))
    assert _remote_fetch_bytes(tiered_node) > fetched                      # as a read through it does

    create_topic(tiered_node.bootstrap, "not-tiered", 1, {})
    produce_all(tiered_node.bootstrap, "not-tiered", [(0, None, b"v%d" % i, None, None) for i in range(50)])
    plain = {**_options(tiered_node), "subscribe": "not-tiered"}
    assert [p.segment for p in _plan(plain)] == [None]
    assert [r[4] for r in _rows(spark, plain)] == list(range(50))


def test_auto_reads_through_the_brokers_when_the_store_is_not_there(tiered_node, tmp_path, caplog):
    elsewhere = _options(tiered_node, **{"rsm.config.storage.root": str(tmp_path / "not-mounted")})
    with caplog.at_level(logging.INFO, logger="tierlog.spark.remote_auto"):
        assert all(p.segment is None for p in _plan(elsewhere))
    assert "holds none of their segments" in caplog.text


def _stream(spark, node, sink, checkpoint, trigger: dict):
    reader = spark.readStream.format("tierlog")
    for k, v in _options(node, startingOffsets="earliest", maxOffsetsPerTrigger="3000").items():
        reader = reader.option(k, v)
    return (reader.load().select("partition", "offset").writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(checkpoint)).trigger(**trigger).start())


def test_a_stream_catches_up_directly_then_reads_the_tail_through_the_brokers(spark, tiered_node, tmp_path):
    batches: dict[int, list] = {}

    def sink(df, batch_id):           # idempotent: a micro-batch run again replaces what it wrote
        batches[batch_id] = [(r.partition, r.offset) for r in df.collect()]

    fetched = _remote_fetch_bytes(tiered_node)
    query = _stream(spark, tiered_node, sink, tmp_path / "checkpoint", {"processingTime": "200 milliseconds"})
    deadline = time.monotonic() + 180
    while len(batches) < 2 and time.monotonic() < deadline:
        query.awaitTermination(0.2)
    query.stop()
    assert len(batches) >= 2
    tail = RECORDS + PARTITIONS * 10
    produce_all(tiered_node.bootstrap, TOPIC, [(i % PARTITIONS, None, b"tail", None, None)
                                               for i in range(RECORDS, tail)])
    _stream(spark, tiered_node, sink, tmp_path / "checkpoint", {"availableNow": True}).awaitTermination(180)
    read = [row for b in sorted(batches) for row in batches[b]]
    assert sorted(read) == sorted((i % PARTITIONS, i // PARTITIONS) for i in range(tail))     # every offset once
    assert len(batches) >= 3 and all(len(b) <= 3000 for b in batches.values())     # maxOffsetsPerTrigger
    assert _remote_fetch_bytes(tiered_node) == fetched      # the tiered part never went through a broker


TXN_TOPIC, TXN_RECORDS, TXN_PAD = "remote-txn", 60, b"x" * 20_000     # 1.2 MiB per transaction


def _transactions(node, producer, first: int, count: int) -> list[bytes]:
    """Transactions ``first``.. of TXN_RECORDS values each, every odd one aborted; the committed values."""
    committed = []
    for txn in range(first, first + count):
        values = [b"%02d-%02d:" % (txn, i) + TXN_PAD for i in range(TXN_RECORDS)]
        producer.begin_transaction()
        for v in values:
            producer.produce(TXN_TOPIC, v, partition=0)
        if txn % 2:
            assert producer.flush(30) == 0
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
            committed += values
    return committed


def _tiered_past(node, offset: int) -> None:
    wait_for(lambda: (offsets(node, TXN_TOPIC, 0, LATEST_TIERED) or -1) >= offset, 120,
             f"{TXN_TOPIC} uploaded past {offset}", interval_s=0.3)


def _committed_read(spark, node, remote: str) -> tuple[list, list]:
    options = {"kafka.bootstrap.servers": node.bootstrap, "subscribe": TXN_TOPIC,
               "kafka.isolation.level": "read_committed", "remoteStorage": remote}
    reader = spark.read.format("tierlog")
    for k, v in options.items():
        reader = reader.option(k, v)
    rows = sorted((r.offset, bytes(r.value)) for r in reader.load().select("offset", "value").collect())
    return _plan(options), rows


def test_read_committed_direct_leaves_out_aborted_transactions_as_the_brokers_do(spark, tiered_node):
    """Each transaction takes TXN_RECORDS offsets and a marker. Transaction 3 (aborted) is uploaded
    while its marker is in the local log only: direct reads stop where it begins (the uploaded
    producer snapshot shows it open) and the brokers read the rest. Once the marker is uploaded, the
    direct read drops it too, found in a later segment's .txnindex than its data."""
    create_topic(tiered_node.bootstrap, TXN_TOPIC, 1, TIERED_TOPIC)
    producer = Producer({"bootstrap.servers": tiered_node.bootstrap, "linger.ms": 5,
                         "transactional.id": f"remote-txn-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(30)
    per_txn = TXN_RECORDS + 1
    committed = _transactions(tiered_node, producer, 0, 4)
    _tiered_past(tiered_node, 3 * per_txn + TXN_RECORDS // 2)        # some of transaction 3 is uploaded
    plan, direct = _committed_read(spark, tiered_node, str(tiered_node.remote))
    remote = [p for p in plan if p.segment is not None]
    assert remote and max(p.end for p in remote) == 3 * per_txn, plan    # not into the undecided-here txn
    assert min(p.start for p in remote) == 0                        # aborted transaction 1: read directly
    assert [v for _, v in direct] == committed                      # no aborted record leaked
    assert direct == _committed_read(spark, tiered_node, "off")[1]

    committed += _transactions(tiered_node, producer, 4, 2)
    producer.flush(30)
    _tiered_past(tiered_node, 4 * per_txn)                           # transaction 3's marker uploaded
    plan, direct = _committed_read(spark, tiered_node, "auto")
    assert max(p.end for p in plan if p.segment is not None) > 4 * per_txn, plan
    assert [v for _, v in direct] == committed
    assert direct == _committed_read(spark, tiered_node, "off")[1]


def test_tiered_range_reads_with_the_broker_stopped(spark, tiered_node):
    tiered = {p: offsets(tiered_node, TOPIC, p, LATEST_TIERED) for p in range(PARTITIONS)}
    ends = json.dumps({TOPIC: {str(p): tiered[p] + 1 for p in range(PARTITIONS)}})
    through_broker = _rows(spark, _options(tiered_node, remoteStorage="off", endingOffsets=ends))
    tiered_node.stop()
    options = _options(tiered_node, remoteStorage=str(tiered_node.remote), endingOffsets=ends,
                       **{"kafka.request.timeout.ms": "2000"})
    assert all(p.segment is not None for p in _plan(options))
    assert _rows(spark, options) == through_broker
    latest = _rows(spark, {**options, "endingOffsets": "latest"})          # latest: the store's last offset
    assert latest == through_broker


def test_remote_storage_option_errors(spark, tiered_node):
    with pytest.raises(Exception, match="remoteStorage"):
        _plan(_options(tiered_node, remoteStorage="s3:///prefix"))
    with pytest.raises(Exception, match="remoteStorage: unknown remote storage setting"):
        _plan(_options(tiered_node, remoteStorage=str(tiered_node.remote), **{"rsm.config.storage.bogus": "1"}))


def test_direct_read_from_s3_equals_the_broker_read(spark, s3_tiered_node):
    settings = s3_tiered_node.settings
    location = f"s3://{settings['rsm.config.storage.s3.bucket.name']}/{settings['rsm.config.storage.s3.prefix']}"
    store_options = {k: v for k, v in settings.items() if k.startswith("rsm.config.storage.s3.")
                     and not k.endswith((".bucket.name", ".prefix"))}
    direct = _options(s3_tiered_node, remoteStorage=location, **store_options)
    assert sum(p.segment is not None for p in _plan(direct)) >= PARTITIONS
    through_broker = _rows(spark, _options(s3_tiered_node, remoteStorage="off"))
    assert _rows(spark, direct) == through_broker
    auto = _options(s3_tiered_node)                 # the bucket, endpoint and region from the broker
    assert {p.store for p in _plan(auto) if p.segment is not None} == {
        StoreSpec(None, tuple(sorted((k, v) for k, v in settings.items() if k.startswith("rsm.config.storage."))))}
    assert _rows(spark, auto) == through_broker
