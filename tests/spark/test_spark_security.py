"""Spark batch write and read over SASL_SSL (SCRAM-SHA-512, the cluster ``tierlog up --security
sasl_ssl`` lays out: 1 controller + 1 broker), with Kafka's source options
(``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``,
``kafka.ssl.truststore.*``); what the source reads over SASL_SSL equals what it reads over the
broker's PLAINTEXT listener, offsets and timestamps included."""

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from secured import check_logs, start_secured

TOPIC = "spark-secured"


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    cluster = start_secured(tmp_path_factory.mktemp("spark-sasl"), brokers=1, plaintext=True,
                            overrides={"offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1"})
    yield cluster
    check_logs(cluster)


def _options(cluster) -> dict:
    return {"kafka.bootstrap.servers": cluster.bootstrap, "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                      f'username="admin" password="{cluster.admin_password}";',
            "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": str(cluster.ca)}


def _read(spark, options: dict) -> list[tuple]:
    rows = spark.read.format("tierlog").options(**options).option("subscribe", TOPIC).load().collect()
    return sorted((r.partition, r.offset, r.timestamp, bytes(r.key), bytes(r.value)) for r in rows)


def test_batch_write_and_read_over_sasl_ssl(spark, secured):
    rows = [(f"k{i}", f"v{i}", i % 2) for i in range(300)]
    df = spark.createDataFrame(rows, "key string, value string, partition int")
    admin = AdminClient(secured.admin)
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(timeout=30)
    df.write.format("tierlog").options(**_options(secured)).option("topic", TOPIC).mode("append").save()
    over_tls = _read(spark, _options(secured))
    assert sorted((k.decode(), v.decode(), p) for p, _, _, k, v in over_tls) == sorted(rows)
    [broker] = secured.brokers
    assert over_tls == _read(spark, {"kafka.bootstrap.servers": f"127.0.0.1:{broker.plaintext_port}"})
