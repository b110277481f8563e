"""Metadata changes reach every broker before a client can tell (issue 12, "Fast metadata propagation").

Each check is a race a client can lose; it is repeated so that a broker that
answers from a stale image fails the test (before the fix: 2-3 stale answers in 10).
"""
import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

pytestmark = [pytest.mark.integration, pytest.mark.cluster(controllers=3, brokers=3)]
TRIES = 20


def test_describe_through_another_broker_shows_what_an_alter_just_set(cluster):
    first, *_, last = cluster.brokers
    alter = AdminClient({"bootstrap.servers": first.bootstrap})
    describe = AdminClient({"bootstrap.servers": last.bootstrap})
    alter.create_topics([NewTopic("cfg", 1, 3)])["cfg"].result(30)
    stale = []
    for i in range(TRIES):
        value = str(3_600_000 + i)
        res = ConfigResource("topic", "cfg", incremental_configs=[
            ConfigEntry("retention.ms", value, incremental_operation=AlterConfigOpType.SET)])
        alter.incremental_alter_configs([res])[res].result(30)
        got = next(iter(describe.describe_configs([ConfigResource("topic", "cfg")]).values())).result(30)
        if got["retention.ms"].value != value:
            stale.append((value, got["retention.ms"].value))
    assert stale == []

