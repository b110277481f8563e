"""Batch writes through the tierlog sink, read back with the source."""
import pytest
from clients import consume_all, create_topic
from pyspark.sql import functions as F


def test_write_then_read_back(spark, spark_node):
    create_topic(spark_node.bootstrap, "write-a", 3)
    rows = [(f"k{i}".encode() if i % 4 else None, f"v{i}".encode(), i % 3,
             [("n", str(i).encode())] if i % 2 else None) for i in range(500)]
    df = spark.createDataFrame(rows, "key binary, value binary, partition int, "
                                     "headers array<struct<key string, value binary>>")
    (df.write.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap)
       .option("topic", "write-a").mode("append").save())
    back = (spark.read.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap)
            .option("subscribe", "write-a").option("includeHeaders", "true").load().collect())
    got = sorted(((None if r.key is None else bytes(r.key), bytes(r.value), r.partition,
                   [(h.key, bytes(h.value)) for h in r.headers] if r.headers else None) for r in back),
                 key=lambda r: r[1])
    assert got == sorted(rows, key=lambda r: r[1])
    assert len(consume_all(spark_node.bootstrap, "write-a", 3, 500)) == 500   # a plain Kafka consumer agrees


def test_string_columns_and_topic_column(spark, spark_node):
    create_topic(spark_node.bootstrap, "write-b", 1)
    df = spark.range(100).select(F.lit("write-b").alias("topic"), F.col("id").cast("string").alias("key"),
                                 F.concat(F.lit("value-"), F.col("id").cast("string")).alias("value"))
    df.write.format("tierlog").option("bootstrap.servers", spark_node.bootstrap).mode("append").save()
    back = (spark.read.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap)
            .option("subscribe", "write-b").load().selectExpr("cast(value as string) v").collect())
    assert sorted(r.v for r in back) == sorted(f"value-{i}" for i in range(100))


def test_missing_value_column_names_it(spark, spark_node):
    df = spark.range(3).selectExpr("cast(id as string) as key")
    with pytest.raises(Exception, match="needs a .value. column"):
        df.write.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap) \
          .option("topic", "write-a").mode("append").save()


def test_delivery_failure_fails_the_task(spark, spark_node):
    create_topic(spark_node.bootstrap, "write-c", 1)
    df = spark.range(5).selectExpr("cast(id as string) as value", "7 as partition")   # no partition 7
    with pytest.raises(Exception, match="not delivered|undelivered|Unknown partition"):
        (df.write.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap)
           .option("topic", "write-c").option("kafka.message.timeout.ms", "3000").mode("append").save())


def test_the_default_save_mode_appends_like_the_kafka_sink_and_overwrite_is_refused(spark, spark_node):
    create_topic(spark_node.bootstrap, "write-d", 1)
    df = spark.range(20).selectExpr("cast(id as string) as value")
    writer = df.write.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap).option("topic", "write-d")
    writer.save()                                   # Spark's default mode, ErrorIfExists
    df.write.save(format="tierlog", mode="errorifexists", topic="write-d",
                  **{"kafka.bootstrap.servers": spark_node.bootstrap})
    back = (spark.read.format("tierlog").option("kafka.bootstrap.servers", spark_node.bootstrap)
            .option("subscribe", "write-d").load().selectExpr("cast(value as string) v").collect())
    assert sorted(int(r.v) for r in back) == sorted(list(range(20)) * 2)
    with pytest.raises(Exception, match="save mode Overwrite is not allowed for tierlog"):
        writer.mode("overwrite").save()
