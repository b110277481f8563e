"""``ImageFollower``: which partitions an image or a delta visits, and what each becomes."""
from dataclasses import replace
from types import SimpleNamespace

from tierlog.broker.image_follower import ImageFollower
from tierlog.metadata import MetadataImage, PartitionInfo, TopicInfo

ME = 1


class Host:
    """Records what the follower asks of the replica manager."""

    node_id = ME

    def __init__(self, hosted=(), logs=()):
        self._hosted, self._logs, self.calls = list(hosted), list(logs), []

    def hosted(self):
        return self._hosted

    def stored_logs(self):
        return self._logs

    def log_config(self, topic):
        self.calls.append(("config", topic.name))
        return ("config of", topic.name)

    def host(self, image, topic, p, config):
        self.calls.append(("host", topic.name, p.partition, p.leader))

    def unhost(self, key, topic_deleted):
        self.calls.append(("unhost", *key, topic_deleted))

    def drop(self, key, topic_deleted):
        self.calls.append(("drop", *key, topic_deleted))

    def delete_log(self, key):
        self.calls.append(("delete_log", *key))

    def follow_cluster(self, image):
        self.calls.append(("cluster",))


def _topic(name, *leaders, replicas=(ME, 2), topic_id=b"\x01" * 16, **configs):
    parts = tuple(PartitionInfo(i, leader, 1, replicas, replicas) for i, leader in enumerate(leaders))
    return TopicInfo(name, topic_id, parts, configs)


def _run(follower, image, delta=None):
    for _ in follower.steps(image, delta):
        pass


def _following(base):
    """A follower that applied ``base``, and its host with no calls recorded yet."""
    host = Host()
    follower = ImageFollower(host)
    _run(follower, base)
    host.calls.clear()
    return host, follower


def _delta(base, *topics):
    return SimpleNamespace(image=base, changed_brokers=set(), changed_configs=set(), changed_topics=set(topics))


def test_a_full_image_drops_the_unassigned_deletes_stray_logs_and_hosts_the_rest():
    host = Host(hosted=[("gone", 0), ("t", 0)], logs=[("stray", 0), ("t", 0)])
    image = MetadataImage.empty().with_topic(_topic("t", ME, 2)).with_topic(_topic("other", 2, replicas=(2, 3)))
    _run(ImageFollower(host), image)
    assert host.calls == [("drop", "gone", 0, True), ("delete_log", "stray", 0), ("cluster",), ("config", "t"),
                          ("host", "t", 0, ME), ("host", "t", 1, 2)]


def test_a_delta_visits_only_the_partitions_whose_record_changed():
    t = _topic("t", ME, 2)
    base = MetadataImage.empty().with_topic(t).with_topic(_topic("u", ME))
    host, follower = _following(base)
    moved = replace(t, partitions=(t.partitions[0], replace(t.partitions[1], leader=ME, leader_epoch=2)))
    _run(follower, base.with_topic(moved), _delta(base, "t"))
    assert host.calls == [("config", "t"), ("host", "t", 1, ME)]        # not t-0, nothing of u


def test_a_topic_config_change_visits_all_its_partitions():
    base = MetadataImage.empty().with_topic(_topic("t", ME, 2))
    host, follower = _following(base)
    _run(follower, base.with_topic(_topic("t", ME, 2, **{"retention.ms": "1"})), _delta(base, "t"))
    assert [c for c in host.calls if c[0] == "host"] == [("host", "t", 0, ME), ("host", "t", 1, 2)]


def test_a_reassignment_away_unhosts_and_a_recreated_topic_unhosts_its_old_partitions():
    base = MetadataImage.empty().with_topic(_topic("t", ME, 2))
    host, follower = _following(base)
    second = base.with_topic(_topic("t", 2, 2, replicas=(2, 3)))
    _run(follower, second, _delta(base, "t"))
    assert host.calls == [("config", "t"), ("unhost", "t", 0, False), ("unhost", "t", 1, False)]
    host.calls.clear()
    recreated = _topic("t", ME, topic_id=b"\x02" * 16)
    _run(follower, second.with_topic(recreated), _delta(second, "t"))
    assert host.calls == [("unhost", "t", 0, False), ("unhost", "t", 1, False), ("config", "t"), ("host", "t", 0, ME)]


def test_a_deleted_topic_unhosts_its_partitions_as_deleted():
    base = MetadataImage.empty().with_topic(_topic("t", ME))
    host, follower = _following(base)
    _run(follower, base.without_topic("t"), _delta(base, "t"))
    assert host.calls == [("unhost", "t", 0, True)]


def test_a_delta_from_another_base_or_with_broker_changes_visits_everything():
    base = MetadataImage.empty().with_topic(_topic("t", ME))
    host, follower = _following(base)
    fenced = SimpleNamespace(image=base, changed_brokers={2}, changed_configs=set(), changed_topics=set())
    _run(follower, base, fenced)
    assert ("cluster",) in host.calls and ("host", "t", 0, ME) in host.calls
    host.calls.clear()
    _run(follower, base, _delta(MetadataImage.empty(), "t"))           # not the image applied last
    assert ("cluster",) in host.calls
