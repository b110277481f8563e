"""Remote segments encrypted at rest (issue 22, item 6), over sockets: 1 controller + 1 broker.

fs backend, one cluster:
1. ``rsm.config.encryption.enabled=true`` under key k1 (a key file): a confluent-kafka
   producer writes records carrying a known value, uncompressed; once most of the
   partition lives only in remote storage, no stored object holds the value (every
   object is grepped; the broker's local segments do hold it, so the grep can fail).
2. Rotation: the broker restarts with k2 (an environment variable) as the active key
   and k1 kept for reading; more records; the listing shows segments under k1 and k2,
   and a confluent-kafka consumer reads everything back from offset 0, the front of it
   from remote segments of both keys.
3. ``tierlog remote verify``: without the keys a one-line error naming them; with a
   wrong k1 a one-line error; with both keys exit 0.
4. The broker restarted with a wrong k1: a consumer of the k1 segments gets
   UNKNOWN_SERVER_ERROR (never bytes), the broker logs one ERROR per segment, no
   traceback.

S3 (a moto server process): the same first step and a full read back, and
``tierlog remote verify`` against the bucket with the key.
"""
from __future__ import annotations

import base64
import os
import subprocess
import sys
import time

import boto3
from cluster import Cluster, running, wait_for
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from tiered import (
    MOTO_REGION,
    TIERED_TOPIC,
    MotoServer,
    fs_props,
    remote_listing,
    tiered_state,
    wait_tiered,
    with_moto_credentials,
)

TOPIC, RECORDS = "sealed", 12_000
SECRET = b"SECRET-VALUE-4f1c9a"


def _value(i: int) -> bytes:
    return SECRET + b"-%08d-" % i + b"x" * 180


def _key_file(tmp_path, name: str) -> tuple[str, bytes]:
    key = os.urandom(32)
    path = tmp_path / f"{name}.key"
    path.write_text(base64.b64encode(key).decode() + "\n")
    return str(path), key


def _encryption(key_id: str, key_file: str) -> dict:
    return {"rsm.config.encryption.enabled": "true", "rsm.config.encryption.key.id": key_id,
            "rsm.config.encryption.key.file": key_file}


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", *args], capture_output=True, text=True,
                          timeout=120, check=False)


def _create(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1, config=TIERED_TOPIC)], request_timeout=15)[TOPIC].result(20)


def _produce(bootstrap: str, first: int, count: int) -> dict[int, bytes]:
    acked: dict[int, bytes] = {}

    def delivered(err, msg):
        assert err is None, err
        acked[msg.offset()] = msg.value()

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                         "batch.size": 64 * 1024, "compression.type": "none"})
    for i in range(first, first + count):
        while True:
            try:
                producer.produce(TOPIC, value=_value(i), partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0 and len(acked) == count
    return acked


def _read_all(bootstrap: str, expected: int) -> dict[int, bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "sealed", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    out, deadline = {}, time.monotonic() + 180
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert m.error() is None, m.error()
                out[m.offset()] = m.value()
    finally:
        c.close()
    return out


def _first_error(bootstrap: str, timeout_s: float = 30):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "sealed-err", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                return m.error()            # None: a record was served
        return "no answer"
    finally:
        c.close()


def _objects_holding(blobs: dict[str, bytes], needle: bytes) -> list[str]:
    return [name for name, data in blobs.items() if needle in data]


def _fs_objects(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _local_segments(broker) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in broker.data_dir.rglob(f"{TOPIC}-0/*.log")}


def _key_ids(props: dict) -> list[str | None]:
    return [s.key_id for p in remote_listing(props, TOPIC) for s in p.segments]


def test_encrypted_fs_store_rotation_verify_and_a_wrong_key(tmp_path):
    remote = tmp_path / "remote-storage"
    k1_file, _ = _key_file(tmp_path, "k1")
    k2_file, k2 = _key_file(tmp_path, "k2")
    wrong_file, _ = _key_file(tmp_path, "wrong")
    props = {**fs_props(remote), **_encryption("k1", k1_file)}
    with running(Cluster(tmp_path, controllers=1, brokers=1, props=props)) as cluster:
        broker = cluster.brokers[0]
        _create(cluster.bootstrap)
        acked = _produce(cluster.bootstrap, 0, RECORDS)
        wait_tiered(cluster, TOPIC, 1, {0: RECORDS})
        objects = _fs_objects(remote)
        assert sum(name.endswith(".log") for name in objects) >= 2, sorted(objects)
        assert _objects_holding(_local_segments(broker), SECRET), "the value is not in the local segments"
        assert _objects_holding(objects, SECRET) == []
        assert set(_key_ids(props)) == {"k1"}

        # rotation: k2 from an environment variable, k1 kept for reading
        broker.stop()
        broker.props.update({"rsm.config.encryption.key.id": "k2", "rsm.config.encryption.key.env": "TIERLOG_K2",
                             "rsm.config.encryption.keys.k1.file": k1_file})
        broker.props.pop("rsm.config.encryption.key.file")
        os.environ["TIERLOG_K2"] = base64.b64encode(k2).decode()
        try:
            broker.start()
        finally:
            del os.environ["TIERLOG_K2"]
        acked.update(_produce(cluster.bootstrap, RECORDS, RECORDS))
        wait_for(lambda: "k2" in _key_ids(props) and (s := tiered_state(cluster, TOPIC, 0)) and
                 s["local_start"] > RECORDS, 120, "segments uploaded under k2 and deleted locally")
        assert _objects_holding(_fs_objects(remote), SECRET) == []
        assert _read_all(cluster.bootstrap, len(acked)) == acked

        no_key = _cli("remote", "verify", "--storage", str(remote))
        assert no_key.returncode == 1 and no_key.stderr.count("\n") == 1, no_key
        assert "encrypted under key(s) k1, k2" in no_key.stderr
        wrong = _cli("remote", "verify", "--storage", str(remote), "--key-file", f"k1={wrong_file}",
                     "--key-file", f"k2={k2_file}")
        assert wrong.returncode == 1 and wrong.stderr.count("\n") == 1, wrong
        assert "key 'k1' does not open remote segment" in wrong.stderr
        good = _cli("remote", "verify", "--storage", str(remote), "--key-file", f"k1={k1_file}",
                    "--key-file", f"k2={k2_file}")
        assert good.returncode == 0, good
        listed = _cli("remote", "ls", "--storage", str(remote))
        assert "finished (key k1)" in listed.stdout and "finished (key k2)" in listed.stdout, listed

        # a broker with the wrong k1 serves no bytes of the k1 segments
        broker.stop()
        broker.props["rsm.config.encryption.keys.k1.file"] = wrong_file
        broker.props.pop("rsm.config.encryption.key.env")
        broker.props["rsm.config.encryption.key.file"] = k2_file
        broker.start()
        error = _first_error(cluster.bootstrap)
        assert isinstance(error, KafkaError) and error.code() == KafkaError.UNKNOWN, error
        log = broker.log_path.read_text()
        k1_segments = _key_ids(props).count("k1")
        lines = [line for line in log.splitlines() if "cannot be decrypted" in line]
        assert 1 <= len(lines) <= k1_segments and all(" ERROR " in line for line in lines), lines
        assert "does not open" in lines[0] and "Traceback" not in log


def test_encrypted_s3_store_holds_no_plaintext_and_reads_back(tmp_path, monkeypatch):
    with_moto_credentials(monkeypatch)
    k1_file, _ = _key_file(tmp_path, "k1")
    with MotoServer(tmp_path / "moto") as moto:
        props = {**fs_props(tmp_path / "unused"), **moto.settings(), **_encryption("k1", k1_file)}
        props.pop("rsm.config.storage.root")
        with running(Cluster(tmp_path, controllers=1, brokers=1, props=props)) as cluster:
            _create(cluster.bootstrap)
            acked = _produce(cluster.bootstrap, 0, RECORDS)
            wait_tiered(cluster, TOPIC, 1, {0: RECORDS})
            s3 = boto3.client("s3", endpoint_url=moto.endpoint, region_name=MOTO_REGION)
            keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=moto.bucket)
                    for o in page.get("Contents", [])]
            objects = {k: s3.get_object(Bucket=moto.bucket, Key=k)["Body"].read() for k in keys}
            assert sum(k.endswith(".log") for k in objects) >= 2, keys
            assert _objects_holding(objects, SECRET) == []
            assert _read_all(cluster.bootstrap, RECORDS) == acked
            verify = _cli("remote", "verify", "--storage", f"s3://{moto.bucket}/cluster/", "--key-file",
                          f"k1={k1_file}", "--set", f"rsm.config.storage.s3.endpoint.url={moto.endpoint}",
                          "--set", f"rsm.config.storage.s3.region={MOTO_REGION}",
                          "--set", "rsm.config.storage.s3.path.style.access.enabled=true")
            assert verify.returncode == 0, verify
