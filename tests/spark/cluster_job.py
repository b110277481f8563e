"""The batch read the Spark standalone test submits (spark-submit --py-files tierlog.zip): prints
one JSON line with the rows' digest and where the executors imported tierlog from."""
import hashlib
import json
import sys

COLUMNS = ["partition", "offset", "key", "value", "timestamp"]


def digest(df) -> dict:
    rows = sorted(tuple(r) for r in df.select(*COLUMNS).collect())
    h = hashlib.sha256()
    for row in rows:
        h.update(repr(row).encode())
    return {"rows": len(rows), "sha256": h.hexdigest()}


def read(spark, bootstrap: str, topic: str, **options):
    reader = spark.read.format("tierlog").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _tierlog_on_executors(spark) -> list[str]:
    def where(_):
        import tierlog
        yield tierlog.__file__
    return sorted(set(spark.sparkContext.parallelize(range(4), 4).mapPartitions(where).collect()))


def main(bootstrap: str, topic: str) -> None:
    from pyspark.sql import SparkSession

    import tierlog.spark
    spark = SparkSession.builder.appName("tierlog-cluster-test").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    tierlog.spark.register(spark)
    out = digest(read(spark, bootstrap, topic, minPartitions="4"))
    out["tierlog_on_executors"] = _tierlog_on_executors(spark)
    print("RESULT " + json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:3])
