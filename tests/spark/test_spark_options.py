"""Option parsing and range planning (pure; no Spark, no node)."""
import os
import sys
import types

import pytest

from tierlog.spark.option_errors import HIDE_TRACEBACK_ENV, option_errors_in_one_line
from tierlog.spark.options import OptionError, parse_sink_options, parse_source_options
from tierlog.spark.planning import OffsetRange, rate_limit, split_ranges
from tierlog.spark.runner_exit import STREAMING_SOURCE_RUNNER, quiet_runner_exit


def test_defaults_follow_the_kafka_source():
    batch = parse_source_options({"bootstrap.servers": "h:1", "subscribe": "a, b"}, streaming=False)
    assert batch.subscribe == ("a", "b") and batch.starting.kind == "earliest" and batch.ending.kind == "latest"
    assert batch.fail_on_data_loss and not batch.include_headers
    stream = parse_source_options({"kafka.bootstrap.servers": "h:1", "assign": '{"a": [0, 2]}'}, streaming=True)
    assert stream.assign == (("a", 0), ("a", 2)) and stream.starting.kind == "latest" and stream.ending is None


@pytest.mark.parametrize("options, streaming, named", [
    ({"subscribe": "a"}, False, "kafka.bootstrap.servers"),
    ({"kafka.bootstrap.servers": "nohost", "subscribe": "a"}, False, "kafka.bootstrap.servers"),
    ({"kafka.bootstrap.servers": "h:1"}, False, "subscribe"),
    ({"kafka.bootstrap.servers": "h:1", "subscribe": "a", "startingOffsets": "first"}, False, "startingOffsets"),
    ({"kafka.bootstrap.servers": "h:1", "subscribe": "a", "endingOffsets": "latest"}, True, "endingOffsets"),
    ({"kafka.bootstrap.servers": "h:1", "subscribePattern": "(", }, False, "subscribePattern"),
    ({"kafka.bootstrap.servers": "h:1", "subscribe": "a", "startingTimestamp": "yesterday"}, False,
     "startingTimestamp"),
    ({"kafka.bootstrap.servers": "h:1", "subscribe": "a", "failOnDataLoss": "maybe"}, False, "failOnDataLoss"),
    ({"kafka.bootstrap.servers": "h:1", "subscribe": "a", "maxOffsetsPerTrigger": "0"}, True,
     "maxOffsetsPerTrigger"),
])
def test_bad_options_name_themselves(options, streaming, named):
    with pytest.raises(OptionError, match=named):
        parse_source_options(options, streaming=streaming)


def test_sink_defaults_to_acks_all_and_passes_kafka_options():
    sink = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t", "kafka.linger.ms": "50"})
    assert sink.producer_config["acks"] == "all" and sink.producer_config["linger.ms"] == "50"
    assert sink.producer_config["log_level"] == "4"       # no librdkafka info lines in Spark's output
    assert parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.log_level": "7"}).producer_config[
        "log_level"] == "7"
    assert sink.topic == "t"


def test_the_transactional_sink_options():
    base = {"kafka.bootstrap.servers": "h:1", "topic": "t"}
    assert not parse_sink_options(base).transactional
    sink = parse_sink_options({**base, "transactional": "true", "transactionalIdPrefix": "orders"})
    assert (sink.transactional, sink.transactional_id_prefix) == (True, "orders")
    assert sink.producer_config["transaction.timeout.ms"] == "120000"     # message.timeout.ms, not 60 s
    for bad, named in (({"kafka.transactional.id": "x"}, "kafka.transactional.id: not supported"),
                       ({"transactional": "yes"}, "transactional: 'yes' is not true or false"),
                       ({"transactionalIdPrefix": " "}, "transactionalIdPrefix: an empty prefix")):
        with pytest.raises(OptionError, match=named):
            parse_sink_options({**base, **bad})


def test_split_and_rate_limit():
    ranges = split_ranges([OffsetRange("t", 0, 0, 1000), OffsetRange("t", 1, 0, 10), OffsetRange("t", 2, 5, 5)],
                          min_partitions=8, max_records=None)
    assert sum(r.size for r in ranges) == 1010 and len(ranges) >= 8
    assert all(r.size <= 300 for r in split_ranges([OffsetRange("t", 0, 0, 1000)], None, 300))
    ends = rate_limit({("t", 0): 0, ("t", 1): 0}, {("t", 0): 900, ("t", 1): 100}, 100)
    assert ends == {("t", 0): 90, ("t", 1): 10}


def test_security_options_reach_the_source_and_the_sink():
    base = {"kafka.bootstrap.servers": "h:1", "subscribe": "a"}
    tls = {"kafka.security.protocol": "SSL", "kafka.ssl.truststore.type": "PEM",
           "kafka.ssl.truststore.location": "/ca.crt", "kafka.ssl.keystore.type": "PEM",
           "kafka.ssl.keystore.location": "/me.pem"}
    source = parse_source_options({**base, **tls}, streaming=False)
    assert source.security.protocol.name == "SSL"
    assert source.security.ssl.truststore_location == "/ca.crt" and source.security.ssl.keystore_location == "/me.pem"
    sink = parse_sink_options({**base, **tls, "topic": "t"}).producer_config
    assert sink["ssl.ca.location"] == "/ca.crt" and sink["ssl.key.location"] == "/me.pem"
    assert "ssl.truststore.location" not in sink and sink["security.protocol"] == "SSL"
    sasl = {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                      'username="alice" password="s3cret";'}
    sink = parse_sink_options({**base, **sasl, "topic": "t"}).producer_config
    assert (sink["sasl.username"], sink["sasl.password"]) == ("alice", "s3cret") and "sasl.jaas.config" not in sink
    creds = parse_source_options({**base, **sasl}, streaming=False).security.sasl
    assert (creds.mechanism, creds.username, creds.password) == ("PLAIN", "alice", "s3cret")
    assert "s3cret" not in repr(creds)
    scram = {**sasl, "kafka.sasl.mechanism": "SCRAM-SHA-512",
             "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                       'username="alice" password="s3cret";'}
    creds = parse_source_options({**base, **scram}, streaming=False).security.sasl
    assert (creds.mechanism, creds.username, creds.password) == ("SCRAM-SHA-512", "alice", "s3cret")
    with pytest.raises(OptionError, match="want org.apache.kafka.common.security.scram.ScramLoginModule"):
        parse_source_options({**base, **sasl, "kafka.sasl.mechanism": "SCRAM-SHA-512"}, streaming=False)
    for bad, named in (({"kafka.ssl.ca.location": "/ca.crt"}, "security.protocol is PLAINTEXT"),
                       ({**tls, "kafka.ssl.truststore.type": "JKS"}, "JKS is not supported")):
        with pytest.raises(OptionError, match=named):
            parse_source_options({**base, **bad}, streaming=False)
        with pytest.raises(OptionError, match=named):
            parse_sink_options({**base, **bad, "topic": "t"})


BASE = {"kafka.bootstrap.servers": "h:1", "subscribe": "a"}


@pytest.mark.parametrize("option, value, named", [
    ("kafka.max.poll.records", "5", ("kafka.max.poll.records: not supported by the tierlog source (it honours "
                                     "kafka.bootstrap.servers, kafka.client.id, kafka.group.id")),
    ("kafka.isolation.level", "serializable", ("kafka.isolation.level: 'serializable' is not read_uncommitted or "
                                               "read_committed")),
    ("kafkaConsumer.pollTimeoutMs", "soon", "kafkaConsumer.pollTimeoutMs: 'soon' is not an integer"),
    ("fetchOffset.numRetries", "-1", "fetchOffset.numRetries: -1 must be at least 0"),
    ("fetchOffset.retryIntervalMs", "x", "fetchOffset.retryIntervalMs: 'x' is not an integer"),
    ("groupIdPrefix", " ", "groupIdPrefix: an empty prefix"),
])
def test_unsupported_kafka_options_and_bad_kafka_source_options_are_refused(option, value, named):
    with pytest.raises(OptionError) as raised:
        parse_source_options({**BASE, option: value}, streaming=False)
    assert str(raised.value).startswith(named)


def test_the_kafka_sources_remaining_options():
    batch = parse_source_options(BASE, streaming=False)
    assert batch.group_id.startswith("spark-kafka-relation-") and batch.client_id == f"consumer-{batch.group_id}-1"
    assert (batch.poll_timeout_s, batch.fetch_offset_retries, batch.fetch_offset_retry_interval_s) == (120, 3, 0.01)
    stream = parse_source_options({**BASE, "groupIdPrefix": "audit", "kafkaConsumer.pollTimeoutMs": "5000",
                                   "fetchOffset.numRetries": "0", "fetchOffset.retryIntervalMs": "250",
                                   "kafka.isolation.level": "read_uncommitted"}, streaming=True)
    assert stream.group_id.startswith("audit-") and stream.group_id != batch.group_id
    assert (stream.poll_timeout_s, stream.fetch_offset_retries, stream.fetch_offset_retry_interval_s) == (5, 0, 0.25)
    fixed = parse_source_options({**BASE, "kafka.group.id": "billing", "groupIdPrefix": "ignored",
                                  "kafka.client.id": "me"}, streaming=True)
    assert (fixed.group_id, fixed.client_id) == ("billing", "me")


def test_offset_queries_are_asked_again_then_the_failure_names_the_options():
    from tierlog.client import KafkaError
    from tierlog.spark.fetch_offset import with_offset_retries

    opts = parse_source_options({**BASE, "fetchOffset.numRetries": "2", "fetchOffset.retryIntervalMs": "40"},
                                streaming=False)
    calls, slept = [], []

    def failing_twice():
        calls.append(1)
        if len(calls) <= 2:
            raise KafkaError(5, "no leader")
        return "offsets"
    assert with_offset_retries(opts, "the offsets", failing_twice, sleep=slept.append) == "offsets"
    assert slept == [0.04, 0.04]

    def always():
        raise KafkaError(5, "no leader")
    with pytest.raises(KafkaError) as raised:
        with_offset_retries(opts, "the offsets", always, sleep=slept.append)
    assert "failed 3 time(s) (fetchOffset.numRetries=2, fetchOffset.retryIntervalMs=40)" in raised.value.__notes__[0]


def test_offsets_behind_latest_as_the_kafka_source_reports_them():
    from tierlog.spark import offsets_behind_latest

    source = {"endOffset": {"t": {"0": 100, "1": 100}}, "latestOffset": '{"t": {"0": 300, "1": 101}}'}
    assert offsets_behind_latest(source) == {"minOffsetsBehindLatest": "1", "maxOffsetsBehindLatest": "200",
                                             "avgOffsetsBehindLatest": "100.5"}
    assert offsets_behind_latest({"endOffset": None, "latestOffset": None}) is None


def test_read_committed_is_taken_and_read_uncommitted_stays_the_default():
    assert parse_source_options(BASE, streaming=False).isolation_level == 0
    committed = parse_source_options({**BASE, "kafka.isolation.level": "READ_COMMITTED"}, streaming=True)
    assert committed.isolation_level == 1
    assert committed.remote_storage == "auto"           # direct reads filter with the uploaded .txnindex
    explicit = parse_source_options({**BASE, "kafka.isolation.level": "read_committed", "remoteStorage": "/tmp/rs"},
                                    streaming=False)
    assert (explicit.isolation_level, explicit.remote_storage) == (1, "/tmp/rs")


@pytest.mark.parametrize(("name", "field"), [("remoteReadAheadChunks", "remote_read_ahead_chunks"),
                                             ("readAheadBatches", "read_ahead_batches")])
def test_read_ahead_counts_are_bounded(name, field):
    base = {"kafka.bootstrap.servers": "h:1", "subscribe": "a"}
    assert getattr(parse_source_options(base, streaming=False), field) == 2
    assert getattr(parse_source_options({**base, name: "0"}, streaming=False), field) == 0
    for bad, named in (("-1", "must be at least 0"), ("17", "must be at most 16"), ("x", "not an integer")):
        with pytest.raises(OptionError, match=f"{name}: .*{named}"):
            parse_source_options({**base, name: bad}, streaming=False)


@pytest.mark.parametrize(("options", "frozen"), [({}, True), ({"freezeWorkerGc": "false"}, False)])
def test_a_read_task_freezes_the_worker_s_gc_unless_told_not_to(options, frozen):
    """tierlog.spark.worker_gc: what is alive at a read task's start leaves the collector's scans."""
    import gc

    from pyspark.sql.datasource import InputPartition

    from tierlog.spark.source import _read_partition
    opts = parse_source_options({**BASE, **options}, streaming=False)
    gc.unfreeze()
    try:
        assert list(_read_partition(opts, InputPartition(0))) == []     # an empty plan's stand-in partition
        assert (gc.get_freeze_count() > 0) is frozen
    finally:
        gc.unfreeze()


@pytest.mark.parametrize(("options", "frozen"), [({}, True), ({"freezeWorkerGc": "false"}, False)])
def test_a_write_task_freezes_the_worker_s_gc_unless_told_not_to(options, frozen):
    import gc

    from tierlog.spark.sink import _write
    sink = parse_sink_options({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t", **options})
    gc.unfreeze()
    try:
        assert _write(sink, None, False, iter([])).records == 0        # nothing to produce, nothing to flush
        assert (gc.get_freeze_count() > 0) is frozen
    finally:
        gc.unfreeze()


def test_freeze_worker_gc_is_a_boolean():
    with pytest.raises(OptionError, match="freezeWorkerGc"):
        parse_source_options({**BASE, "freezeWorkerGc": "sometimes"}, streaming=False)
    with pytest.raises(OptionError, match="freezeWorkerGc"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "freezeWorkerGc": "sometimes"})


def test_an_option_error_leaving_the_source_hides_the_worker_traceback(monkeypatch):
    """Spark's worker then reports the message alone (spark/option_errors.py); other errors keep theirs."""
    monkeypatch.delenv(HIDE_TRACEBACK_ENV, raising=False)

    @option_errors_in_one_line
    class Source:
        def fine(self):
            return iter([1])

        def bug(self):
            raise KeyError("k")

        def bad(self):
            raise OptionError("subscribe: bad")

        def bad_later(self):
            yield 1
            raise OptionError("subscribe: bad")

    assert list(Source().fine()) == [1]
    with pytest.raises(KeyError):
        Source().bug()
    assert HIDE_TRACEBACK_ENV not in os.environ
    with pytest.raises(OptionError):
        Source().bad()
    assert os.environ.pop(HIDE_TRACEBACK_ENV) == "1"
    with pytest.raises(OptionError):
        list(Source().bad_later())
    assert os.environ[HIDE_TRACEBACK_ENV] == "1"


def test_the_streaming_source_runner_ends_without_a_broken_pipe_traceback(monkeypatch):
    """spark/runner_exit.py: in Spark's runner process only, the reader's stop() drops the BrokenPipeError
    of the runner's last report to a JVM that has gone; other errors still print."""
    shown = []
    monkeypatch.setattr(sys, "excepthook", lambda kind, value, tb: shown.append(kind))
    quiet_runner_exit()                                 # not the runner (pytest's __main__): nothing changes
    sys.excepthook(BrokenPipeError, BrokenPipeError(32, "Broken pipe"), None)
    assert shown == [BrokenPipeError]
    runner = types.ModuleType("__main__")
    runner.__spec__ = types.SimpleNamespace(name=STREAMING_SOURCE_RUNNER)
    monkeypatch.setitem(sys.modules, "__main__", runner)
    quiet_runner_exit()
    quiet_runner_exit()                                 # once is enough
    sys.excepthook(BrokenPipeError, BrokenPipeError(32, "Broken pipe"), None)
    sys.excepthook(KeyError, KeyError("k"), None)
    assert shown == [BrokenPipeError, KeyError]
