import pytest

from tierlog.metadata.cluster_records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    ProducerIdsRecord,
    RemoveTopicRecord,
    ReplicaLogCoverage,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from tierlog.metadata.delta import MetadataDelta, MetadataReplayError
from tierlog.metadata.image import MetadataImage, MetadataProvenance

from .helpers import apply, cluster, create_topic, register, tid


def test_brokers_and_topics():
    img = cluster(topics={"a": [(1, 2, 3), (2, 3, 1)]})
    assert img.brokers[1].host == "h1" and img.brokers[1].port == 9001
    assert img.brokers[1].epoch == 11 and img.brokers[1].usable
    t = img.topics["a"]
    assert [p.leader for p in t.partitions] == [1, 2]
    assert img.topic_by_id(tid(1)) is t
    assert img.usable_brokers() == {1, 2, 3}
    assert dict(img.broker_topics[1]) == {"a": 2}
    assert [(t.name, p.partition) for t, p in img.partitions_led_by(2)] == [("a", 1)]
    assert len(list(img.partitions_on(3))) == 2
    assert img.epoch == 1


def test_registered_fenced_is_not_usable():
    img = apply(MetadataImage.empty("c", 1), [register(1, fenced=True)])
    assert img.brokers[1].fenced and img.usable_brokers() == frozenset()


def test_configs_and_producer_ids():
    img = cluster(topics={"a": [(1,)]})
    img = apply(img, [ConfigRecord(2, "a", "retention.ms", "5"),
                      ConfigRecord(4, "", "min.insync.replicas", "2"),
                      ConfigRecord(4, "1", "log.dirs", "/x"),
                      ProducerIdsRecord(1, 11, 2000), NoOpRecord()])
    assert img.topics["a"].configs["retention.ms"] == "5"
    assert img.cluster_configs()["min.insync.replicas"] == "2"
    assert img.broker_configs(1)["log.dirs"] == "/x"
    assert img.next_producer_id == 2000
    assert img.config("min.insync.replicas", img.topics["a"]) == "2"
    img = apply(img, [ConfigRecord(2, "a", "retention.ms", None), ConfigRecord(4, "1", "log.dirs", None)])
    assert "retention.ms" not in img.topics["a"].configs
    assert "1" not in img.configs
    with pytest.raises(MetadataReplayError):
        apply(img, [ProducerIdsRecord(1, 11, 1000)])


def test_partition_change():
    img = cluster(topics={"a": [(1, 2, 3)]})
    cov = (ReplicaLogCoverage(2, 100, 200),)
    img = apply(img, [PartitionChangeRecord(0, tid(1), isr=(1, 2), local_log_coverage=cov)])
    p = img.topics["a"].partitions[0]
    assert p.isr == (1, 2) and p.leader == 1 and p.leader_epoch == 0 and p.partition_epoch == 1
    assert p.local_log == cov
    img = apply(img, [PartitionChangeRecord(0, tid(1), leader=2,
                                            local_log_coverage=(ReplicaLogCoverage(1, 5, 6),))])
    p = img.topics["a"].partitions[0]
    assert p.leader == 2 and p.leader_epoch == 1 and p.partition_epoch == 2
    assert [c.broker_id for c in p.local_log] == [1, 2]


def test_reassignment_updates_index():
    img = cluster(brokers=(1, 2, 3, 4), topics={"a": [(1, 2, 3)]})
    img = apply(img, [PartitionChangeRecord(0, tid(1), replicas=(4, 2, 3), isr=(2, 3))])
    assert 1 not in img.broker_topics and dict(img.broker_topics[4]) == {"a": 1}


def test_remove_topic():
    img = cluster(topics={"a": [(1, 2)], "b": [(2, 3)]})
    img = apply(img, [RemoveTopicRecord(tid(1))])
    assert "a" not in img.topics and img.topic_by_id(tid(1)) is None
    assert 1 not in img.broker_topics and "a" not in img.broker_topics[2]
    with pytest.raises(MetadataReplayError):
        apply(img, [RemoveTopicRecord(tid(1))])


def test_replay_errors():
    img = cluster(topics={"a": [(1, 2)]})
    for rec in (FenceBrokerRecord(9, 0), FenceBrokerRecord(1, 999),
                PartitionChangeRecord(5, tid(1), leader=2),
                PartitionChangeRecord(0, tid(77), leader=2),
                ConfigRecord(2, "nope", "x", "y")):
        with pytest.raises(MetadataReplayError):
            apply(img, [rec])
    with pytest.raises(MetadataReplayError):
        apply(img, create_topic("a", tid(50), [(1,)]))


def test_structural_sharing():
    topics = {f"t{i}": [(1, 2, 3)] for i in range(2000)}
    img = cluster(topics=topics)
    new = apply(img, [PartitionChangeRecord(0, tid(5), isr=(1, 2))])
    assert new.topics["t4"] is not img.topics["t4"]
    same = sum(new.topics[n] is img.topics[n] for n in topics)
    assert same == 1999
    shared = sum(new.topics._buckets[i] is img.topics._buckets[i]
                 for i in range(len(img.topics._buckets)))
    assert shared == len(img.topics._buckets) - 1
    assert new.topic_ids is img.topic_ids and new.broker_topics is img.broker_topics
    assert new.brokers is img.brokers


def test_delta_reports_changes():
    img = cluster(topics={"a": [(1, 2)], "b": [(3,)]})
    d = MetadataDelta(img)
    d.replay(FenceBrokerRecord(1, 11))
    assert d.changed_topics == {"a"} and d.changed_brokers == {1}
    out = d.apply(MetadataProvenance(41, 3, 1234))
    assert out.high_watermark_offset == 42 and out.provenance.last_contained_epoch == 3


# -- broker events (KIP-630 "Amount of Data Replicated") --------------------------------------

def test_fence_moves_leadership_and_shrinks_isr():
    img = cluster(topics={"a": [(1, 2, 3), (2, 3, 1), (3, 2, 4)]}, brokers=(1, 2, 3, 4))
    out = apply(img, [FenceBrokerRecord(1, 11)])
    p0, p1, p2 = out.topics["a"].partitions
    assert (p0.leader, p0.isr, p0.leader_epoch, p0.partition_epoch) == (2, (2, 3), 1, 1)
    assert (p1.leader, p1.isr, p1.leader_epoch, p1.partition_epoch) == (2, (2, 3), 0, 1)
    assert p2 is img.topics["a"].partitions[2]
    assert out.brokers[1].fenced


def test_fence_last_isr_member_goes_to_elr():
    img = cluster(topics={"a": [(1, 2)]})
    img = apply(img, [FenceBrokerRecord(2, 12)])
    img = apply(img, [FenceBrokerRecord(1, 11)])
    p = img.topics["a"].partitions[0]
    assert (p.leader, p.isr, p.elr) == (-1, (), (1,))
    # unfencing broker 2 does not help: it is not in the ELR
    img = apply(img, [UnfenceBrokerRecord(2, 12)])
    assert img.topics["a"].partitions[0].leader == -1
    # unfencing broker 1 elects it from the ELR; the ISR becomes just it
    img = apply(img, [UnfenceBrokerRecord(1, 11)])
    p = img.topics["a"].partitions[0]
    assert (p.leader, p.isr, p.elr) == (1, (1,), ())


def test_unfence_with_unclean_election():
    img = cluster(topics={"a": [(1, 2)]})
    img = apply(img, [ConfigRecord(2, "a", "unclean.leader.election.enable", "true"),
                      FenceBrokerRecord(2, 12), FenceBrokerRecord(1, 11)])
    p = img.topics["a"].partitions[0]
    assert p.leader == -1
    img = apply(img, [UnfenceBrokerRecord(2, 12)])
    p = img.topics["a"].partitions[0]
    assert (p.leader, p.isr, p.elr, p.leader_recovery_state) == (2, (2,), (), 1)


def test_controlled_shutdown_is_an_event():
    img = cluster(topics={"a": [(1, 2, 3)]})
    img = apply(img, [BrokerRegistrationChangeRecord(1, 11, 0, 1)])
    p = img.topics["a"].partitions[0]
    assert img.brokers[1].in_controlled_shutdown and 1 not in img.usable_brokers()
    assert (p.leader, p.isr) == (2, (2, 3))
    img = apply(img, [BrokerRegistrationChangeRecord(2, 12, 1, 0)])
    assert img.brokers[2].fenced and img.topics["a"].partitions[0].leader == 3


def test_unregister_and_reregister():
    img = cluster(topics={"a": [(1, 2)]})
    img = apply(img, [UnregisterBrokerRecord(1, 11)])
    assert 1 not in img.brokers and img.topics["a"].partitions[0].leader == 2
    img = apply(img, [register(1, fenced=True, epoch=50)])
    assert img.brokers[1].epoch == 50 and img.brokers[1].fenced


def test_fence_uses_eligibility_thresholds():
    img = cluster(topics={"a": [(1, 2, 3)]})
    img = apply(img, [
        ConfigRecord(4, "", "leader.election.eligible.local.log.ms", "600000"),
        PartitionChangeRecord(0, tid(1), local_log_coverage=(
            ReplicaLogCoverage(2, 9_900_000, -1), ReplicaLogCoverage(3, 1_000_000, -1)))])
    out = apply(img, [FenceBrokerRecord(1, 11)], now_ms=10_000_000)
    assert out.topics["a"].partitions[0].leader == 3   # 2 has only 100 s of local log
    out = apply(img, [FenceBrokerRecord(1, 11)], now_ms=20_000_000)
    assert out.topics["a"].partitions[0].leader == 2   # now both are eligible


def test_fence_in_same_delta_as_topic_creation():
    img = cluster()
    img = apply(img, create_topic("a", tid(1), [(1, 2)]) + [FenceBrokerRecord(1, 11)])
    p = img.topics["a"].partitions[0]
    assert (p.leader, p.isr) == (2, (2,))


def test_fence_of_fenced_broker_is_noop():
    img = cluster(topics={"a": [(1, 2)]})
    img = apply(img, [FenceBrokerRecord(1, 11)])
    again = apply(img, [FenceBrokerRecord(1, 11)])
    assert again.topics is img.topics


def test_direct_image_edits_keep_the_indexes():
    from tierlog.metadata.image import BrokerInfo, PartitionInfo, TopicInfo
    img = MetadataImage.empty("c", 1, [BrokerInfo(1, "h", 1)])
    t = TopicInfo("x", tid(9), (PartitionInfo(0, 1, 0, (1,), (1,)),))
    img = img.with_topic(t)
    assert img.topic_by_id(tid(9)) is t and dict(img.broker_topics[1]) == {"x": 1}
    img = img.without_topic("x")
    assert not img.topics and not img.topic_ids and not img.broker_topics


def test_malformed_config_values_never_fail_replay():
    img = cluster(topics={"a": [(1, 2)]})
    img = apply(img, [ConfigRecord(2, "a", "min.insync.replicas", "true"),
                      ConfigRecord(4, "", "leader.election.eligible.local.log.ms", "soon"),
                      FenceBrokerRecord(1, 11)])
    p = img.topics["a"].partitions[0]
    assert (p.leader, p.isr) == (2, (2,))


def test_fence_touches_only_the_brokers_topics():
    topics = {f"t{i}": [(1 + i % 4, 1 + (i + 1) % 4)] for i in range(400)}
    img = cluster(brokers=(1, 2, 3, 4), topics=topics)
    d = MetadataDelta(img)
    d.replay(FenceBrokerRecord(1, 11))
    assert d.changed_topics == set(img.broker_topics[1])
    assert len(d.changed_topics) == 200
