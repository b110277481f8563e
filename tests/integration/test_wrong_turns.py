"""A newcomer's wrong turns (issue 41): each answers at once with one line that names the cause and the fix."""
from __future__ import annotations

import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tierlog.spark import pipeline, pipeline_cluster

pytestmark = pytest.mark.integration


def _create(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)


def test_the_pipeline_refuses_an_events_topic_with_too_few_partitions(shared_node, tmp_path):
    """README's tiered-storage example leaves `events` with 1 partition; `./dev pipeline --bootstrap`
    said 'no leader' after 60 s. Now it names the topic, the count it needs and the way out, before Spark starts."""
    _create(shared_node.bootstrap, "few", 1)
    run = subprocess.run([sys.executable, "-m", "tierlog.spark.pipeline", "--bootstrap", shared_node.bootstrap,
                          "--events-topic", "few", "--results-topic", "few-counts", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=40, check=False)
    assert run.returncode == 1
    expected = "pipeline: topic few exists with 1 partition; the pipeline needs 3: delete it or pass --events-topic NAME"
    assert run.stderr.splitlines() == [expected], run.stderr


def test_the_pipeline_takes_existing_topics_with_enough_partitions(shared_node):
    _create(shared_node.bootstrap, "enough", 4)
    args = pipeline._parse_args(["--events-topic", "enough", "--results-topic", "enough-counts"])
    pipeline_cluster.create_topics(shared_node.bootstrap, pipeline_cluster.topics_of(args))
    pipeline_cluster.create_topics(shared_node.bootstrap, pipeline_cluster.topics_of(args))     # both there now
