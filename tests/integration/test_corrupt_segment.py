"""A byte gone bad in a follower's closed segment is found and fetched again (issue 21).

1 controller + 2 brokers, an RF 2 topic led by broker 2.  After 3 MiB of
records (1 MiB segments), a byte in the middle of the follower's first closed
segment is flipped on disk.  The follower's background check
(``log.segment.verify.bytes.per.second``) finds the bad batch, the follower
truncates there and fetches the rest again from the leader: its log ends up
byte for byte the leader's, every batch passing its CRC.
"""
from pathlib import Path

from cluster import FAST_REPLICATION, Cluster, running, wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.records import decode_batches

TOPIC, LEADER, FOLLOWER = "scrubbed", 2, 3


def _batches(partition_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(partition_dir.glob("*.log")))


def _all_valid(data: bytes) -> bool:
    try:
        return sum(1 for _ in decode_batches(data)) > 0
    except Exception:       # noqa: BLE001 - a CRC mismatch or torn batch
        return False


def test_a_corrupt_byte_in_a_followers_closed_segment_is_fetched_again(tmp_path):
    with running(Cluster(tmp_path, controllers=1, brokers=2, props=FAST_REPLICATION)) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[LEADER, FOLLOWER]],
                                      config={"segment.bytes": str(1024 * 1024)})],
                            request_timeout=15)[TOPIC].result(timeout=20)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20})
        for i in range(15_000):
            while True:
                try:
                    producer.produce(TOPIC, value=b"%08d:" % i + b"y" * 190, partition=0)
                    break
                except BufferError:
                    producer.poll(0.05)
        assert producer.flush(60) == 0
        leader_dir = cluster.broker(LEADER).data_dir / f"{TOPIC}-0"
        follower_dir = cluster.broker(FOLLOWER).data_dir / f"{TOPIC}-0"
        wait_for(lambda: _batches(follower_dir) == _batches(leader_dir), 30, "the follower caught up")
        segments = sorted(follower_dir.glob("*.log"))
        assert len(segments) >= 2, segments
        middle = segments[0].stat().st_size // 2        # a closed segment: the active one is the last
        with open(segments[0], "r+b") as f:
            f.seek(middle)
            byte = f.read(1)
            f.seek(middle)
            f.write(bytes([byte[0] ^ 0x10]))
        assert not _all_valid(_batches(follower_dir))

        def repaired():
            data = _batches(follower_dir)
            return data == _batches(leader_dir) and _all_valid(data)
        wait_for(repaired, 30, "the follower's log fetched again and equal to the leader's")
        follower_log = cluster.broker(FOLLOWER).log_path.read_text()
        assert "corrupt batch in closed segment 0" in follower_log
        assert "truncated to" in follower_log and "after a corrupt batch" in follower_log
