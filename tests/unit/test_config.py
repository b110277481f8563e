import pytest

from tierlog.config import (
    ConfigError,
    NodeConfig,
    format_properties,
    parse_listeners,
    parse_properties,
)


def test_properties_parsing_handles_comments_and_separators():
    props = parse_properties("# c\n! c\nnode.id=3\nlisteners : PLAINTEXT://h:1\n\n log.dirs= /a,/b \n")
    assert props == {"node.id": "3", "listeners": "PLAINTEXT://h:1", "log.dirs": "/a,/b"}


def test_defaults_and_types():
    cfg = NodeConfig({"node.id": "2", "auto.create.topics.enable": "false", "log.dirs": "/x,/y"})
    assert cfg.node_id == 2
    assert cfg["auto.create.topics.enable"] is False
    assert cfg["num.partitions"] == 1 and cfg["message.max.bytes"] == 1048588
    assert [str(p) for p in cfg.log_dirs] == ["/x", "/y"]
    assert cfg.advertised == cfg.listeners


def test_topic_defaults_map_broker_keys_to_topic_keys():
    cfg = NodeConfig({"node.id": "1", "log.segment.bytes": "1000", "log.message.timestamp.type": "LogAppendTime"})
    d = cfg.topic_defaults()
    assert d["segment.bytes"] == "1000" and d["message.timestamp.type"] == "LogAppendTime"
    assert d["retention.ms"] == "604800000"


@pytest.mark.parametrize("props, key", [
    ({}, "node.id"),
    ({"node.id": "x"}, "node.id"),
    ({"node.id": "1", "num.partitions": "many"}, "num.partitions"),
    ({"node.id": "1", "auto.create.topics.enable": "maybe"}, "auto.create.topics.enable"),
    ({"node.id": "1", "listeners": "localhost:9092"}, "listeners"),
])
def test_bad_values_name_the_key(props, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        NodeConfig(props)


def test_listener_parsing():
    (l1, l2) = parse_listeners(["PLAINTEXT://:9092", "internal://[::1]:9093"])
    assert (l1.name, l1.host, l1.port) == ("PLAINTEXT", "", 9092)
    assert (l2.name, l2.host, l2.port) == ("INTERNAL", "::1", 9093)


def test_unknown_keys_are_kept_aside():
    cfg = NodeConfig({"node.id": "1", "some.plugin.setting": "x"})
    assert cfg.unknown == ["some.plugin.setting"]


@pytest.mark.parametrize("value, expected", [
    ("127.0.0.1:0", ("127.0.0.1", 0)),
    (":9404", ("0.0.0.0", 9404)),
    ("[::1]:9404", ("::1", 9404)),
    ("", None),
])
def test_metrics_listener(value, expected):
    assert NodeConfig({"node.id": "1", "metrics.prometheus.listener": value}).metrics_listener == expected
    assert NodeConfig({"node.id": "1"}).metrics_listener is None


@pytest.mark.parametrize("value", ["9404", "localhost", "h:port", "h:70000", "h:-1"])
def test_a_bad_metrics_listener_is_a_one_line_config_error(value):
    with pytest.raises(ConfigError, match=r"^metrics\.prometheus\.listener: bad value .*HOST:PORT[^\n]*$"):
        NodeConfig({"node.id": "1", "metrics.prometheus.listener": value})


def test_request_bounds_are_bounded_by_default_and_take_kafkas_forms():
    cfg = NodeConfig({"node.id": "1"})
    assert cfg.request_memory_bytes == 128 << 20 and cfg["max.connections"] == 10000
    assert cfg["max.connections.per.ip"] == 1000 and cfg["connections.max.idle.ms"] == 600000
    kafka_default = NodeConfig({"node.id": "1", "queued.max.request.bytes": "-1"})
    assert kafka_default.request_memory_bytes == 500 * 104857600      # queued.max.requests x request size
    cfg = NodeConfig({"node.id": "1", "max.connections.per.ip.overrides": "hostA:100, 127.0.0.1:200,[::1]:3"})
    assert cfg.ip_overrides == {"hostA": 100, "127.0.0.1": 200, "::1": 3}


@pytest.mark.parametrize("props, key", [
    ({"max.connections.per.ip.overrides": "127.0.0.1"}, "max.connections.per.ip.overrides"),
    ({"queued.max.request.bytes": "0"}, "queued.max.request.bytes"),
    ({"connections.max.idle.ms": "0"}, "connections.max.idle.ms"),
])
def test_bad_request_bounds_name_the_key(props, key):
    with pytest.raises(ConfigError, match=key):
        NodeConfig({"node.id": "1", **props})


def test_properties_are_java_properties():
    text = ("a.key value\nb.key:  spaced value  \ncontinued = one,\\\n    two,\\\n    three\n"
            "escaped=tab\\there \\u0041 back\\\\slash\nempty.key\nrepeated=1\nrepeated=2\n")
    assert parse_properties(text) == {
        "a.key": "value", "b.key": "spaced value", "continued": "one,two,three",
        "escaped": "tab\there A back\\slash", "empty.key": "", "repeated": "2"}


def test_a_bad_unicode_escape_is_a_config_error():
    with pytest.raises(ConfigError, match="bad properties file"):
        parse_properties("log.dirs=/data/\\uZZZZ\n")


def test_format_properties_reads_back():
    props = {"log.dirs": "C:\\data\\tierlog", "listeners": "PLAINTEXT://h:1", "odd": "a\nb\tc", "empty": ""}
    text = format_properties(props, "written by a test")
    assert text.startswith("# written by a test\n")
    assert "listeners=PLAINTEXT://h:1\n" in text      # readable as written: no needless escapes
    assert parse_properties(text) == props
