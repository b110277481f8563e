from dataclasses import dataclass, field

from tierlog.metadata.cluster_records import FenceBrokerRecord, encode
from tierlog.metadata.loader import MetadataLoader
from tierlog.metadata.snapshot import snapshot_record_bytes
from tierlog.metadata.snapshot_generator import SnapshotGenerator

from .helpers import cluster, create_topic, register, tid


@dataclass
class Batch:
    records: list
    last_offset: int
    epoch: int = 1
    append_timestamp: int = 0


@dataclass
class SnapshotId:
    end_offset: int
    epoch: int


@dataclass
class Reader:
    snapshot_id: SnapshotId
    items: list

    def __iter__(self):
        return iter(self.items)


@dataclass
class LeaderAndEpoch:
    leader_id: int
    epoch: int


def _enc(recs):
    return [encode(r) for r in recs]


def test_commit_builds_and_publishes_images():
    loader = MetadataLoader(cluster_id="c")
    seen = []
    loader.subscribe(lambda img, delta: seen.append((img, delta)))
    loader.handle_commit(Batch(_enc([register(1), register(2)]), 1, append_timestamp=5))
    loader.handle_commit(Batch(_enc(create_topic("a", tid(1), [(1, 2)])), 3))
    loader.handle_commit(Batch(_enc([FenceBrokerRecord(1, 11)]), 4, epoch=2))
    assert len(seen) == 3
    img = loader.image
    assert img.topics["a"].partitions[0].leader == 2
    assert img.provenance.last_contained_offset == 4 and img.high_watermark_offset == 5
    assert img.provenance.last_contained_epoch == 2
    assert seen[-1][1].changed_topics == {"a"}
    assert seen[-1][1].bytes_replayed == len(encode(FenceBrokerRecord(1, 11)))
    # an old batch (already contained) is skipped
    loader.handle_commit(Batch(_enc([FenceBrokerRecord(2, 12)]), 4))
    assert loader.image is img


def test_bad_records_are_reported_and_skipped():
    loader = MetadataLoader()
    loader.handle_commit(Batch([b"\x01\x63\x00", encode(register(1)),
                                encode(FenceBrokerRecord(9, 0))], 2))
    assert 1 in loader.image.brokers
    assert len(loader.errors) == 2 and "api key 99" in loader.errors[0][1]


def test_a_failing_subscriber_is_counted_and_the_others_still_get_the_image():
    loader = MetadataLoader()
    seen = []

    def broken(img, delta):
        raise KeyError("a bug in one part of the node")
    loader.subscribe(broken)
    loader.subscribe(lambda img, delta: seen.append(img.provenance.last_contained_offset))
    loader.handle_commit(Batch(_enc([register(1)]), 0))
    loader.handle_leader_change(LeaderAndEpoch(3, 1))
    assert seen == [0, 0] and 1 in loader.image.brokers and loader.image.controller_id == 3
    assert loader.apply_error_count == 2 and loader.error_count == 0


def test_load_snapshot_then_commit():
    img = cluster(topics={"a": [(1, 2)], "b": [(2, 3)]})
    data = list(snapshot_record_bytes(img))
    loader = MetadataLoader(cluster_id="c1", controller_id=1)
    loader.handle_load_snapshot(Reader(SnapshotId(10, 3), [Batch(data[:3], 0), Batch(data[3:], 0)]))
    assert loader.image.topics == img.topics and loader.image.brokers == img.brokers
    assert loader.image.provenance.last_contained_offset == 9
    loader.handle_commit(Batch(_enc([FenceBrokerRecord(2, 12)]), 9))   # contained: skipped
    assert loader.image.brokers[2].usable
    loader.handle_commit(Batch(_enc([FenceBrokerRecord(2, 12)]), 10))
    assert not loader.image.brokers[2].usable
    # a reader of bare record bytes works too
    loader.handle_load_snapshot(Reader(SnapshotId(5, 1), data))
    assert loader.image.topics == img.topics


def test_leader_change_sets_controller():
    loader = MetadataLoader()
    seen = []
    loader.subscribe(lambda img, d: seen.append(img.controller_id))
    loader.handle_leader_change(LeaderAndEpoch(3, 7))
    loader.handle_leader_change(LeaderAndEpoch(3, 7))
    assert seen == [3] and loader.leader_epoch == 7


# -- snapshot generator ------------------------------------------------------------------

@dataclass
class Writer:
    end_offset: int
    epoch: int
    ts: int
    chunks: list = field(default_factory=list)
    frozen: bool = False

    def append(self, records):
        assert not self.frozen
        self.chunks.append(list(records))

    def freeze(self):
        self.frozen = True


class Raft:
    def __init__(self):
        self.writers = []

    def create_snapshot(self, end_offset, epoch, ts):
        if any(w.end_offset == end_offset for w in self.writers):
            return None
        w = Writer(end_offset, epoch, ts)
        self.writers.append(w)
        return w


def _feed(loader, n, size_each=1, t0=0):
    for i in range(n):
        off = loader.image.provenance.last_contained_offset + 1
        loader.handle_commit(Batch(_enc([register(1 + i % 3, epoch=i)]), off,
                                   append_timestamp=t0 + i))


def test_generator_bytes_trigger():
    raft = Raft()
    rec_len = len(encode(register(1, epoch=0)))
    gen = SnapshotGenerator(raft.create_snapshot, max_bytes_between_snapshots=rec_len * 3,
                            records_per_append=2)
    loader = MetadataLoader()
    loader.subscribe(gen.publish)
    _feed(loader, 2)
    assert raft.writers == []
    _feed(loader, 1)
    [w] = raft.writers
    assert w.frozen and w.end_offset == 3 and w.epoch == 1 and w.ts == 0
    recs = [r for c in w.chunks for r in c]
    assert all(len(c) <= 2 for c in w.chunks)
    assert recs == list(snapshot_record_bytes(loader.image))
    assert gen.bytes_since == 0


def test_generator_record_count_trigger():
    raft = Raft()
    gen = SnapshotGenerator(raft.create_snapshot, min_records=4)
    loader = MetadataLoader()
    loader.subscribe(gen.publish)
    _feed(loader, 3)
    assert not raft.writers
    _feed(loader, 1)
    assert len(raft.writers) == 1


def test_generator_interval_trigger_needs_new_records():
    raft = Raft()
    gen = SnapshotGenerator(raft.create_snapshot, max_interval_ms=1000, now_ms=0)
    loader = MetadataLoader()
    loader.subscribe(gen.publish)
    _feed(loader, 1)
    assert not raft.writers
    assert gen.tick(loader.image, 999) is None
    assert gen.tick(loader.image, 1000) == "interval"
    assert len(raft.writers) == 1
    assert gen.tick(loader.image, 5000) is None          # nothing new since


def test_generator_from_config_and_existing_snapshot():
    raft = Raft()
    gen = SnapshotGenerator.from_config(raft.create_snapshot, {
        "metadata.log.max.record.bytes.between.snapshots": "1",
        "metadata.log.max.snapshot.interval.ms": "0"})
    assert gen.max_bytes == 1 and gen.max_interval_ms == 0 and gen.min_records is None
    loader = MetadataLoader()
    raft.create_snapshot(1, 1, 0)                         # already exists at end offset 1
    loader.subscribe(gen.publish)
    _feed(loader, 1)
    assert gen.snapshots_written == 0 and len(raft.writers) == 1
    _feed(loader, 1)
    assert gen.snapshots_written == 1


def test_with_the_raft_types():
    from tierlog.raft.types import LeaderAndEpoch as RaftLeader
    from tierlog.raft.types import LogBatch, OffsetAndEpoch

    img = cluster(topics={"a": [(1, 2)]})
    data = tuple(snapshot_record_bytes(img))

    class RaftReader:
        snapshot_id = OffsetAndEpoch(7, 2)
        last_contained_ts_ms = 99

        def __iter__(self):
            return iter(data)

    loader = MetadataLoader()
    loader.handle_load_snapshot(RaftReader())
    assert loader.image.provenance == type(loader.image.provenance)(6, 2, 99)
    loader.handle_commit(LogBatch(7, 2, 100, (b"\x00\x01",), control=True))
    assert loader.image.provenance.last_contained_offset == 7 and not loader.errors
    loader.handle_commit(LogBatch(8, 2, 101, (encode(FenceBrokerRecord(1, 11)),)))
    assert loader.image.topics["a"].partitions[0].leader == 2
    loader.handle_leader_change(RaftLeader(None, 3))
    assert loader.image.controller_id == -1
    loader.handle_leader_change(RaftLeader(2, 4))
    assert loader.image.controller_id == 2
