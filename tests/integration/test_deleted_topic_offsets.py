"""A deleted topic's committed offsets leave its groups (Kafka's GroupCoordinator.onPartitionsDeleted): a topic
created again under the name starts without them, over sockets with confluent-kafka."""
from __future__ import annotations

import pytest
from clients import create_topic
from cluster import wait_for
from confluent_kafka import OFFSET_INVALID, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

pytestmark = pytest.mark.integration


def _committed(consumer: Consumer, *tps: tuple[str, int]) -> list[int]:
    return [tp.offset for tp in consumer.committed([TopicPartition(t, p) for t, p in tps], timeout=10)]


def test_a_topic_created_again_has_no_offsets_of_the_deleted_one(node):
    boot = node.bootstrap
    create_topic(boot, "doomed", 2)
    create_topic(boot, "stays", 1)
    consumer = Consumer({"bootstrap.servers": boot, "group.id": "keeper", "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition("doomed", 0, 5), TopicPartition("doomed", 1, 3),
                                 TopicPartition("stays", 0, 4)], asynchronous=False)
        assert _committed(consumer, ("doomed", 0), ("doomed", 1), ("stays", 0)) == [5, 3, 4]
        admin = AdminClient({"bootstrap.servers": boot})
        admin.delete_topics(["doomed"], operation_timeout=20)["doomed"].result(30)
        wait_for(lambda: "doomed" not in admin.list_topics(timeout=10).topics, 30, "the topic to be gone")
        create_topic(boot, "doomed", 2)
        wait_for(lambda: _committed(consumer, ("doomed", 0), ("doomed", 1)) == [OFFSET_INVALID] * 2, 30,
                 "the deleted topic's offsets to leave the group")
        assert _committed(consumer, ("stays", 0)) == [4], "other topics' offsets stay"
    finally:
        consumer.close()
    node.stop()
    node.start()            # the tombstones are in __consumer_offsets: a reload does not bring the offsets back
    again = Consumer({"bootstrap.servers": boot, "group.id": "keeper", "enable.auto.commit": False})
    try:
        assert _committed(again, ("doomed", 0), ("doomed", 1), ("stays", 0)) == [OFFSET_INVALID] * 2 + [4]
    finally:
        again.close()
