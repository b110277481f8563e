"""Transactions on a tiered topic (KIP-98 over KIP-405), over sockets: 1 controller + 1 broker,
remote storage on the local filesystem, encrypted at rest.

A transactional confluent-kafka producer commits and aborts transactions of 32 KiB records on a
topic with 1 MiB segments, then commits filler until the aborted data and its markers are in
remote storage only (the local log starts past them). The uploads carry each segment's
``.txnindex`` (encrypted like every other object); a read_committed consumer from offset 0 gets
exactly the committed records (the AbortedTransactions come from the remote ``.txnindex`` objects,
some of them in a later segment than the data they abort), a read_uncommitted one every record;
``tierlog remote verify`` (decrypting every object) and ``tierlog remote ls`` accept the new
objects."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import uuid

import pytest
from clients import read_isolated
from cluster import Cluster, running, wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from tiered import fs_props, remote_listing, tiered_state

from tierlog.tiered.layout import IndexType

pytestmark = pytest.mark.integration

TOPIC = "txn-tiered"
TRANSACTIONS, RECORDS_PER_TXN, FILLER_TXNS = 12, 10, 5
VALUE_PAD = b"x" * 32 * 1024    # 320 KiB per transaction: several in each 1 MiB segment, some straddling two
TOPIC_CONFIG = {"remote.storage.enable": "true", "segment.bytes": str(1024 * 1024), "local.retention.bytes": "1"}


def _aborted(txn: int) -> bool:
    return txn % 3 == 1 and txn < TRANSACTIONS


def _values(txn: int) -> list[bytes]:
    return [b"%03d-%03d:" % (txn, i) + VALUE_PAD for i in range(RECORDS_PER_TXN)]


def _produce(boot: str) -> None:
    p = Producer({"bootstrap.servers": boot, "transactional.id": f"tiered-{uuid.uuid4().hex[:6]}",
                  "linger.ms": 5})
    p.init_transactions(30)
    for txn in range(TRANSACTIONS + FILLER_TXNS):
        p.begin_transaction()
        for v in _values(txn):
            p.produce(TOPIC, v, partition=0)
        if _aborted(txn):
            assert p.flush(30) == 0
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_read_committed_from_remote_storage_skips_aborted_data(tmp_path):
    remote = tmp_path / "remote-storage"
    key_file = tmp_path / "k1.key"
    key_file.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    props = {**fs_props(remote), "transaction.state.log.num.partitions": "1",
             "rsm.config.encryption.enabled": "true", "rsm.config.encryption.key.id": "k1",
             "rsm.config.encryption.key.file": str(key_file)}
    with running(Cluster(tmp_path, controllers=1, brokers=1, props=props)) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1, config=TOPIC_CONFIG)], request_timeout=15)[TOPIC].result(20)
        _produce(cluster.bootstrap)
        # each transaction takes RECORDS_PER_TXN offsets and its marker: the filler starts here
        filler_start = TRANSACTIONS * (RECORDS_PER_TXN + 1)
        wait_for(lambda: (s := tiered_state(cluster, TOPIC, 0)) and s["local_start"] > filler_start, 120,
                 "the aborted transactions in remote storage only", interval_s=0.5)
        segments = [s for p in remote_listing(props, TOPIC) for s in p.segments]
        assert any(IndexType.TRANSACTION.value in s.objects for s in segments), "no .txnindex uploaded"
        committed = [v for t in range(TRANSACTIONS + FILLER_TXNS) if not _aborted(t) for v in _values(t)]
        everything = [v for t in range(TRANSACTIONS + FILLER_TXNS) for v in _values(t)]
        # read from offset 0 to the end: read_committed must not return one aborted record
        assert read_isolated(cluster.bootstrap, TOPIC, 1, "read_committed", timeout_s=60) == committed
        assert read_isolated(cluster.bootstrap, TOPIC, 1, "read_uncommitted", timeout_s=60) == everything

    verify = _cli("remote", "verify", "--storage", str(remote), "--topic", TOPIC, "--key-file", f"k1={key_file}")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    listed = _cli("remote", "ls", "--storage", str(remote), "--topic", TOPIC, "--json")
    assert listed.returncode == 0, listed.stderr
    [partition] = json.loads(listed.stdout)["partitions"]
    assert len(partition["segments"]) >= len(segments) and not partition["unfinished"]
