"""The metadata image digest (server/image_digest.py): the same records in any order give the same
digest, a changed record another; the collector reports offset and digest, computed once per image."""
from prometheus_client import CollectorRegistry, generate_latest

from tierlog.metadata.cluster_records import (
    BrokerEndpoint,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)
from tierlog.metadata.delta import MetadataDelta
from tierlog.metadata.image import MetadataImage, MetadataProvenance
from tierlog.metadata.snapshot import load_snapshot, snapshot_records
from tierlog.server import image_digest as module
from tierlog.server.image_digest import ImageDigestCollector, image_digest


def cluster(topics: dict[str, list[tuple[int, ...]]], brokers=(1, 2, 3)) -> MetadataImage:
    """``brokers`` registered in that order, ``topics`` created in theirs with those replica lists."""
    delta = MetadataDelta(MetadataImage.empty("c1", 1))
    for b in brokers:
        delta.replay(RegisterBrokerRecord(b, bytes(15) + bytes([b]), 10 + b,
                                          (BrokerEndpoint("PLAINTEXT", f"h{b}", 9000 + b),)))
    for name, assignment in topics.items():
        topic_id = name.encode().rjust(16, b"\0")
        delta.replay(TopicRecord(name, topic_id))
        for i, replicas in enumerate(assignment):
            delta.replay(PartitionRecord(i, topic_id, replicas, replicas, leader=replicas[0], leader_epoch=0,
                                         partition_epoch=0))
    return delta.apply()


def test_the_same_records_in_another_order_give_the_same_digest():
    img = cluster({"a": [(1, 2), (2, 1)], "b": [(2, 1)]})
    assert image_digest(cluster({"b": [(2, 1)], "a": [(1, 2), (2, 1)]}, brokers=(3, 1, 2))) == image_digest(img)
    assert image_digest(load_snapshot(snapshot_records(img))) == image_digest(img)


def test_a_changed_image_has_another_digest():
    img = cluster({"a": [(1, 2)]})
    assert image_digest(cluster({"a": [(2, 1)]})) != image_digest(img)        # another leader
    delta = MetadataDelta(img)
    delta.replay(UnfenceBrokerRecord(2, img.brokers[2].epoch))
    assert image_digest(delta.apply()) != image_digest(img)


def test_the_collector_reports_offset_and_digest_once_per_image(monkeypatch):
    img = load_snapshot(snapshot_records(cluster({"a": [(1, 2)]})),
                        provenance=MetadataProvenance(41, 3, 0))      # up to 41: end offset 42
    computed = []
    monkeypatch.setattr(module, "image_digest", lambda i: computed.append(i) or "abc")
    registry = CollectorRegistry()
    registry.register(ImageDigestCollector(lambda: img))
    for _ in range(3):
        text = generate_latest(registry).decode()
    assert 'tierlog_metadata_image_info{digest="abc",offset="42"} 1.0' in text, text
    assert computed == [img]
