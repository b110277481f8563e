from tierlog.metadata.cluster_records import (
    BrokerEndpoint,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from tierlog.metadata.delta import MetadataDelta
from tierlog.metadata.image import MetadataImage


def tid(n: int) -> bytes:
    return n.to_bytes(16, "big")


def register(b: int, fenced: bool = False, epoch: int | None = None) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(b, tid(1000 + b), 10 + b if epoch is None else epoch,
                                (BrokerEndpoint("PLAINTEXT", f"h{b}", 9000 + b),), fenced=fenced)


def create_topic(name: str, topic_id: bytes, assignments) -> list:
    out = [TopicRecord(name, topic_id)]
    for i, replicas in enumerate(assignments):
        out.append(PartitionRecord(i, topic_id, tuple(replicas), tuple(replicas),
                                   leader=replicas[0], leader_epoch=0, partition_epoch=0))
    return out


def apply(image: MetadataImage, records, now_ms: int = 0) -> MetadataImage:
    d = MetadataDelta(image, now_ms=now_ms)
    for r in records:
        d.replay(r)
    return d.apply()


def cluster(brokers=(1, 2, 3), topics=None) -> MetadataImage:
    recs = [register(b) for b in brokers]
    for i, (name, assign) in enumerate((topics or {}).items()):
        recs += create_topic(name, tid(i + 1), assign)
    return apply(MetadataImage.empty("c1", 1), recs)
