"""The example pipeline (./dev pipeline), briefly, against the test node: windows come out.

Slow for a unit test: about 40-55 s on 2 cores (an 18 s run plus topic creation, query start
and a clean stop), the longest of the Spark tests.
"""
import io
import json

from clients import consume_all

from tierlog.spark import pipeline


def test_pipeline_writes_windows_to_the_topic_and_parquet(spark, spark_node, tmp_path):
    # short windows so a window closes (and reaches Parquet) within the run
    args = pipeline._parse_args(["--duration", "18", "--rate", "500", "--window", "4 seconds",
                                 "--watermark", "1 second", "--trigger", "1 second", "--out", str(tmp_path)])
    piped = io.StringIO()         # not a terminal: plain lines, as in a pipe or a log file
    summary = pipeline.run(spark_node.bootstrap, args, tmp_path, spark=spark,   # a hang is pytest-timeout's
                           console=pipeline.console_for(piped))
    assert summary.events_produced > 0 and summary.delivery_errors == 0
    assert summary.result_records > 0 and summary.first_result_s is not None
    assert summary.parquet_rows > 0, summary.text()

    results = consume_all(spark_node.bootstrap, pipeline.RESULTS_TOPIC, 1, summary.result_records, timeout_s=20)
    rows = [json.loads(m.value()) for m in results]
    assert rows and {r["action"] for r in rows} <= set(pipeline.ACTIONS)
    assert all(r["events"] > 0 and r["window_start"] < r["window_end"] for r in rows)

    lines = piped.getvalue().splitlines()
    assert "queries running: 4 seconds windows, watermark 1 second, a micro-batch every 1 second" in lines
    status = [line for line in lines if "events produced" in line]
    assert status and all(line.count(" batch ") == 2 and line.endswith("parquet files") for line in status), lines
    assert not any(c in piped.getvalue() for c in "┃│━\x1b"), "a table or colour in a pipe"

    closed = spark.read.parquet(str(summary.parquet_path)).collect()
    assert len(closed) == summary.parquet_rows
    assert sum(r.events for r in closed) <= summary.events_produced
