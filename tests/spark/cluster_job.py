"""The batch reads the Spark standalone test submits (spark-submit --py-files tierlog.zip
cluster_job.py READS_JSON): one JSON line per read with the rows' digest, and where the executors
imported tierlog from."""
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


def main(reads: str) -> None:
    """Each read of ``reads`` (JSON: a list of name, bootstrap, topic and source options; minPartitions
    4 unless given), one RESULT line each."""
    from pyspark.sql import SparkSession

    import tierlog.spark
    spark = SparkSession.builder.appName("tierlog-cluster-test").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    tierlog.spark.register(spark)
    on_executors = _tierlog_on_executors(spark)
    for job in json.loads(reads):
        out = digest(read(spark, job["bootstrap"], job["topic"], **{"minPartitions": "4", **job["options"]}))
        print("RESULT " + json.dumps({"name": job["name"], **out, "tierlog_on_executors": on_executors}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
