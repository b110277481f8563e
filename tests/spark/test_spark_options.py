"""Option parsing and range planning (pure; no Spark, no node)."""
import pytest

from tierlog.spark.options import OptionError, parse_sink_options, parse_source_options
from tierlog.spark.planning import OffsetRange, rate_limit, split_ranges


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
    assert sink.topic == "t"


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
    with pytest.raises(OptionError, match="SCRAM-SHA-512 is not supported"):
        parse_source_options({**base, **sasl, "kafka.sasl.mechanism": "SCRAM-SHA-512"}, streaming=False)
    for bad, named in (({"kafka.ssl.ca.location": "/ca.crt"}, "security.protocol is PLAINTEXT"),
                       ({**tls, "kafka.ssl.truststore.type": "JKS"}, "JKS is not supported")):
        with pytest.raises(OptionError, match=named):
            parse_source_options({**base, **bad}, streaming=False)
        with pytest.raises(OptionError, match=named):
            parse_sink_options({**base, **bad, "topic": "t"})
