"""The `tierlog` client commands, run as real subprocesses against a broker.

The broker comes from the `broker_bootstrap` fixture: a tierlog node process
on a free loopback port, or the broker at $TIERLOG_TEST_BOOTSTRAP when that is
set (any Kafka-compatible broker). Every test uses its own topics, so they
share one broker.
"""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
import time
import uuid

import pytest
from nodeproc import free_port

pytestmark = pytest.mark.integration

RUN_TIMEOUT_S = 90
# `consume --group` into an empty group waited Kafka's 3 s initial rebalance delay each time
SHARED_NODE_PROPS = {"group.initial.rebalance.delay.ms": "100"}
ERROR_PREFIX = "tierlog: error: "


@pytest.fixture(scope="module")
def broker_bootstrap(shared_node):
    """HOST:PORT of the broker under test: a tierlog node, or $TIERLOG_TEST_BOOTSTRAP."""
    yield os.environ.get("TIERLOG_TEST_BOOTSTRAP") or shared_node.bootstrap


def tierlog(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Run `python -m tierlog.cli.main ARGS`; stdout as bytes, stderr as text."""
    env = {k: v for k, v in os.environ.items() if k != "TIERLOG_BOOTSTRAP"}
    result = subprocess.run(
        [sys.executable, "-m", "tierlog.cli.main", *args],
        input=stdin if stdin is not None else b"", capture_output=True,
        timeout=RUN_TIMEOUT_S, env=env, check=False,
    )
    result.stderr = result.stderr.decode("utf-8", "replace")
    return result


def ok(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    result = tierlog(*args, stdin=stdin)
    assert result.returncode == 0, f"tierlog {' '.join(args)} failed: {result.stderr}"
    return result


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """Assert the run failed with exactly one `tierlog: error:` line; return it."""
    assert result.returncode != 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"expected one line, got: {result.stderr!r}"
    assert lines[0].startswith(ERROR_PREFIX), lines[0]
    assert "Traceback" not in result.stderr
    return lines[0][len(ERROR_PREFIX):]


def new_topic(bootstrap: str, partitions: int = 1) -> str:
    name = f"cli-{uuid.uuid4().hex[:10]}"
    ok("topics", "create", name, "--partitions", str(partitions), "--bootstrap-server", bootstrap)
    return name


def json_of(result: subprocess.CompletedProcess):
    return json.loads(result.stdout.decode("utf-8"))


def json_lines(result: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]


def list_topics(bootstrap: str) -> list[str]:
    return json_of(ok("topics", "list", "--json", "--bootstrap-server", bootstrap))


def poll_until(condition, what: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out waiting for {what}")


# --- help -------------------------------------------------------------------


def test_top_level_help_lists_every_client_command():
    result = ok("--help")
    text = result.stdout.decode()
    for command in ("topics", "configs", "produce", "consume", "perf"):
        assert f"\n    {command} " in text
    assert "first session" in text and "--bootstrap-server" in text


# --- topics -----------------------------------------------------------------


def test_topic_create_list_describe_delete(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    name = f"cli-{uuid.uuid4().hex[:10]}"
    created = ok("topics", "create", name, "--partitions", "3", "--replication-factor", "1",
                 "--config", "retention.ms=600000", *b)
    assert created.stdout.decode().strip() == f"created topic {name}"
    assert name in list_topics(broker_bootstrap)

    [described] = json_of(ok("topics", "describe", name, "--json", *b))
    assert described["topic"] == name
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    for partition in described["partitions"]:
        assert partition["leader"] is not None
        assert partition["leader"] in partition["replicas"]
        assert partition["isr"] and set(partition["isr"]) <= set(partition["replicas"])
    table = ok("topics", "describe", name, *b).stdout.decode()
    assert f"Topic: {name}" in table and "PartitionCount: 3" in table

    ok("topics", "delete", name, *b)
    poll_until(lambda: name not in list_topics(broker_bootstrap), f"{name} to disappear")


def test_describe_reports_topic_id(broker_bootstrap):
    name = new_topic(broker_bootstrap)
    [described] = json_of(ok("topics", "describe", name, "--json", "--bootstrap-server", broker_bootstrap))
    if described["topic_id"] is None:
        pytest.skip("broker does not return topic ids (Metadata v10+)")
    assert len(described["topic_id"]) == 22  # 16 bytes, url-safe base64, unpadded


def test_create_existing_topic_fails_unless_if_not_exists(broker_bootstrap):
    name = new_topic(broker_bootstrap)
    b = ["--bootstrap-server", broker_bootstrap]
    assert "already exists" in one_error_line(tierlog("topics", "create", name, *b))
    assert ok("topics", "create", name, "--if-not-exists", *b).stdout == b""


def test_delete_missing_topic_fails_unless_if_exists(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    missing = f"cli-missing-{uuid.uuid4().hex[:8]}"
    assert "does not exist" in one_error_line(tierlog("topics", "delete", missing, *b))
    ok("topics", "delete", missing, "--if-exists", *b)


def test_topic_alter_adds_partitions_and_never_removes_them(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    name = new_topic(broker_bootstrap, partitions=2)
    assert ok("topics", "alter", name, "--partitions", "5", *b).stdout.decode().strip() == \
        f"topic {name} now has 5 partitions"
    [described] = json_of(ok("topics", "describe", name, "--json", *b))
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2, 3, 4]
    assert "INVALID_PARTITIONS" in one_error_line(tierlog("topics", "alter", name, "--partitions", "3", *b))
    missing = f"cli-missing-{uuid.uuid4().hex[:8]}"
    assert "does not exist" in one_error_line(tierlog("topics", "alter", missing, "--partitions", "3", *b))


def test_describe_unknown_topic_fails(broker_bootstrap):
    missing = f"cli-missing-{uuid.uuid4().hex[:8]}"
    error = one_error_line(tierlog("topics", "describe", missing, "--bootstrap-server", broker_bootstrap))
    assert missing in error and "does not exist" in error


# --- configs ----------------------------------------------------------------


def _topic_configs(bootstrap: str, topic: str, *extra: str) -> dict[str, dict]:
    described = json_of(ok("configs", "describe", "--topic", topic, "--json", *extra,
                           "--bootstrap-server", bootstrap))
    assert described["resource"] == "topic" and described["name"] == topic
    return {entry["name"]: entry for entry in described["configs"]}


def test_configs_of_a_group(broker_bootstrap):
    """KIP-848 group configs through the GROUP resource: any group id, only its own values by default."""
    b = ["--bootstrap-server", broker_bootstrap]
    group = f"cli-group-{uuid.uuid4().hex[:8]}"
    ok("configs", "alter", "--group", group, "--set", "consumer.session.timeout.ms=50000", *b)
    described = json_of(ok("configs", "describe", "--group", group, "--json", *b))
    assert described["resource"] == "group" and [(e["name"], e["value"], e["source"]) for e in described[
        "configs"]] == [("consumer.session.timeout.ms", "50000", "GROUP_CONFIG")]
    line = one_error_line(tierlog("configs", "alter", "--group", group, "--set", "consumer.session.timeout.ms=1", *b))
    assert "consumer.session.timeout.ms must be greater than or equal to" in line, line


def test_configs_alter_set_and_delete(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap)
    ok("configs", "alter", "--topic", topic, "--set", "retention.ms=1234567", *b)
    every = _topic_configs(broker_bootstrap, topic, "--all")
    assert every["retention.ms"]["value"] == "1234567"

    ok("configs", "alter", "--topic", topic, "--delete", "retention.ms", *b)
    after = _topic_configs(broker_bootstrap, topic, "--all")
    assert after.get("retention.ms", {}).get("value") != "1234567"


def test_configs_describe_shows_only_dynamic_overrides_by_default(broker_bootstrap):
    topic = new_topic(broker_bootstrap)
    ok("configs", "alter", "--topic", topic, "--set", "retention.ms=7654321",
       "--bootstrap-server", broker_bootstrap)
    source = _topic_configs(broker_bootstrap, topic, "--all")["retention.ms"]["source"]
    if source != "DYNAMIC_TOPIC_CONFIG":
        pytest.skip(f"broker reports a topic override with source {source}")
    dynamic = _topic_configs(broker_bootstrap, topic)
    assert dynamic["retention.ms"]["value"] == "7654321"
    assert all(entry["source"] == "DYNAMIC_TOPIC_CONFIG" for entry in dynamic.values())


def test_configs_describe_broker(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap)
    [described] = json_of(ok("topics", "describe", topic, "--json", *b))
    broker_id = described["partitions"][0]["leader"]
    result = json_of(ok("configs", "describe", "--broker", str(broker_id), "--all", "--json", *b))
    assert result["resource"] == "broker" and result["name"] == str(broker_id)
    assert isinstance(result["configs"], list)
    error = one_error_line(tierlog("configs", "describe", "--broker", str(broker_id + 1000), *b))
    assert "not in the cluster" in error


def test_configs_alter_needs_something_to_do(broker_bootstrap):
    topic = new_topic(broker_bootstrap)
    error = one_error_line(tierlog("configs", "alter", "--topic", topic,
                                   "--bootstrap-server", broker_bootstrap))
    assert "nothing to alter" in error


# --- produce and consume ----------------------------------------------------


def test_produce_file_with_keys_and_headers_then_consume_kv_and_json(broker_bootstrap, tmp_path):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap)
    lines = tmp_path / "records.txt"
    lines.write_bytes(b"alice:hello\nbob:hi there\ncarol:a:b\n")
    produced = ok("produce", topic, "--file", str(lines), "--key-separator", ":",
                  "--header", "source=test", "--header", "run=1", *b)
    assert produced.stderr.strip() == "produced 3 records"

    kv = ok("consume", topic, "--format", "kv", "--max-messages", "3", *b)
    assert kv.stdout.splitlines() == [b"alice\thello", b"bob\thi there", b"carol\ta:b"]

    records = json_lines(ok("consume", topic, "--format", "json", "--max-messages", "3", *b))
    assert [(r["key"], r["value"], r["offset"]) for r in records] == [
        ("alice", "hello", 0), ("bob", "hi there", 1), ("carol", "a:b", 2)]
    for record in records:
        assert record["topic"] == topic and record["partition"] == 0
        assert record["headers"] == [{"key": "source", "value": "test"}, {"key": "run", "value": "1"}]
        assert isinstance(record["timestamp"], int) and record["timestamp"] > 0


def test_consume_value_format_prints_headers_and_null_keys(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap)
    ok("produce", topic, "--header", "h=1", *b, stdin=b"one\ntwo\n")
    plain = ok("consume", topic, "--max-messages", "2", *b)
    assert plain.stdout == b"one\ntwo\n"
    assert plain.stderr.strip() == "consumed 2 records"
    with_headers = ok("consume", topic, "--format", "kv", "--print-headers", "--max-messages", "2", *b)
    assert with_headers.stdout.splitlines() == [b"h:1\tnull\tone", b"h:1\tnull\ttwo"]


def test_binary_values_are_base64_in_json(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap)
    ok("produce", topic, *b, stdin=b"\xff\xfe\x00raw\n")
    [record] = json_lines(ok("consume", topic, "--format", "json", "--max-messages", "1", *b))
    assert "value" not in record
    assert record["value_b64"] == "//4AcmF3"
    raw = ok("consume", topic, "--max-messages", "1", *b)
    assert raw.stdout == b"\xff\xfe\x00raw\n"


def test_consume_stops_when_idle(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap)
    ok("produce", topic, *b, stdin=b"a\nb\n")
    result = ok("consume", topic, "--timeout-ms", "1500", *b)
    assert result.stdout == b"a\nb\n"


def test_consume_in_a_group_resumes_after_what_it_printed(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap)
    ok("produce", topic, *b, stdin=b"r1\nr2\nr3\nr4\n")
    first = ok("consume", topic, "--group", "cli-group", "--max-messages", "2", *b)
    assert first.stdout == b"r1\nr2\n"
    rest = ok("consume", topic, "--group", "cli-group", "--timeout-ms", "3000", *b)
    assert rest.stdout == b"r3\nr4\n"
    error = one_error_line(tierlog("consume", topic, "--group", "cli-group", "--from", "5", *b))
    assert "--group" in error


def test_consume_from_offset_and_timestamp(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap, partitions=2)
    ok("produce", topic, "--partition", "1", "--timestamp", "1000", *b, stdin=b"old-0\nold-1\nold-2\n")
    ok("produce", topic, "--partition", "1", "--timestamp", "5000", *b, stdin=b"new-3\nnew-4\n")

    from_offset = ok("consume", topic, "--partition", "1", "--from", "2", "--max-messages", "3",
                     "--format", "json", *b)
    assert [(r["offset"], r["value"]) for r in json_lines(from_offset)] == [
        (2, "old-2"), (3, "new-3"), (4, "new-4")]

    from_time = ok("consume", topic, "--from", "@3000", "--max-messages", "2", "--format", "json", *b)
    records = json_lines(from_time)
    if records and records[0]["timestamp"] < 3000:
        pytest.skip("broker answers ListOffsets by timestamp with an older record's offset")
    assert [(r["partition"], r["offset"], r["timestamp"]) for r in records] == [(1, 3, 5000), (1, 4, 5000)]


def test_consume_from_latest_sees_only_new_records(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap)
    ok("produce", topic, *b, stdin=b"before\n")
    consumer = subprocess.Popen(
        [sys.executable, "-m", "tierlog.cli.main", "consume", topic, "--from", "latest",
         "--max-messages", "1", *b], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # the consumer's start offset is fixed at some unknown moment: keep producing
        # until it has printed one record, which must be a new one
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while consumer.poll() is None and time.monotonic() < deadline:
            ok("produce", topic, *b, stdin=b"after\n")
        out, _ = consumer.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        consumer.kill()
    assert out == b"after\n"


def test_consume_offset_needs_partition_on_multi_partition_topic(broker_bootstrap):
    topic = new_topic(broker_bootstrap, partitions=2)
    error = one_error_line(tierlog("consume", topic, "--from", "0", "--bootstrap-server", broker_bootstrap))
    assert "--partition" in error


def test_consume_offset_past_the_end_fails(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap)
    ok("produce", topic, *b, stdin=b"only\n")
    error = one_error_line(tierlog("consume", topic, "--from", "1000", "--timeout-ms", "500", *b))
    assert "outside partition 0" in error


def test_produce_to_missing_topic_fails(broker_bootstrap):
    missing = f"cli-missing-{uuid.uuid4().hex[:8]}"
    error = one_error_line(tierlog("produce", missing, "--bootstrap-server", broker_bootstrap, stdin=b"x\n"))
    assert "does not exist" in error
    assert missing not in list_topics(broker_bootstrap)


def test_produce_line_without_key_separator_fails(broker_bootstrap):
    topic = new_topic(broker_bootstrap)
    error = one_error_line(tierlog("produce", topic, "--key-separator", "=",
                                   "--bootstrap-server", broker_bootstrap, stdin=b"k=v\nnokey\n"))
    assert error.startswith("line 2: no key separator '='")
    assert "1 records before it were produced" in error


# --- perf -------------------------------------------------------------------


def test_perf_produce_json_figures(broker_bootstrap):
    topic = new_topic(broker_bootstrap, partitions=2)
    result = ok("perf", "produce", "--topic", topic, "--num-records", "3000", "--record-size", "64",
                "--acks", "1", "--linger-ms", "5", "--compression", "lz4", "--json",
                "--bootstrap-server", broker_bootstrap)
    figures = json_of(result)
    assert figures["records"] == 3000 and figures["failed"] == 0
    assert figures["bytes"] == 3000 * 64
    assert figures["records_per_sec"] > 0 and figures["mb_per_sec"] > 0 and figures["elapsed_s"] > 0
    latencies = [figures[f"latency_{k}_ms"] for k in ("p50", "p95", "p99", "p999", "max")]
    assert latencies == sorted(latencies) and latencies[0] > 0
    assert 0 < figures["latency_avg_ms"] <= figures["latency_max_ms"]
    assert result.stderr == ""  # no progress bar when not a terminal


def test_perf_produce_paced_and_summary_line(broker_bootstrap):
    topic = new_topic(broker_bootstrap)
    result = ok("perf", "produce", "--topic", topic, "--num-records", "500", "--record-size", "10",
                "--throughput", "2000", "--bootstrap-server", broker_bootstrap)
    line = result.stdout.decode().strip()
    assert line.startswith("500 records sent, ") and "99.9th." in line


def test_perf_consume_json_figures(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap, partitions=2)
    ok("perf", "produce", "--topic", topic, "--num-records", "2000", "--record-size", "100", "--json", *b)
    figures = json_of(ok("perf", "consume", "--topic", topic, "--messages", "2000", "--json", *b))
    assert figures["records"] == 2000 and figures["complete"] is True
    assert figures["bytes"] == 2000 * 100
    assert figures["records_per_sec"] > 0 and figures["mb_per_sec"] > 0

    to_end = json_of(ok("perf", "consume", "--topic", topic, "--json", *b))
    assert to_end["complete"] is True and 0 < to_end["records"] <= 2000


def test_perf_consume_reports_incomplete_when_records_run_out(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    topic = new_topic(broker_bootstrap)
    ok("produce", topic, *b, stdin=b"a\nb\n")
    result = tierlog("perf", "consume", "--topic", topic, "--messages", "5", "--json", "--timeout", "1", *b)
    assert json_of(result)["complete"] is False and json_of(result)["records"] == 2
    assert "no record for 1s" in one_error_line(result)


# --- errors -----------------------------------------------------------------


def test_unreachable_server_fails_fast_with_one_line():
    port = free_port()  # nothing listens there any more
    result = tierlog("topics", "list", "--bootstrap-server", f"127.0.0.1:{port}")
    assert one_error_line(result).startswith(f"cannot reach bootstrap server 127.0.0.1:{port}")
    assert result.stdout == b""


def test_silent_server_times_out_with_one_line():
    with socket.socket() as silent:  # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        result = tierlog("consume", "t", "--bootstrap-server", address, "--timeout", "1")
    # librdkafka's connection-setup timeout and --timeout race: either may report it
    assert one_error_line(result).startswith(f"cannot reach bootstrap server {address}")


@pytest.mark.parametrize("args, expected", [
    (["consume", "t", "--from", "yesterday"], "argument --from"),
    (["consume", "t", "--from", "@soon"], "@TIMESTAMP_MS"),
    (["topics", "create", "t", "--config", "retention.ms"], "expected KEY=VALUE"),
    (["produce", "t", "--header", "novalue"], "expected KEY=VALUE"),
    (["topics", "create", "t", "--partitions", "0"], "positive integer"),
    (["nosuchcommand"], "invalid choice"),
    (["topics", "list", "--command-config", "/nonexistent/client.properties"], "cannot read"),
])
def test_bad_command_lines_fail_with_one_line(args, expected):
    result = tierlog(*args, "--bootstrap-server", "127.0.0.1:1")
    assert result.returncode == 2
    assert expected in one_error_line(result)


def test_bad_librdkafka_setting_fails_with_one_line(broker_bootstrap):
    result = tierlog("topics", "list", "--command-config", "no.such.property=1",
                     "--bootstrap-server", broker_bootstrap)
    assert result.returncode == 1
    assert "no.such.property" in one_error_line(result)


def test_command_config_file_is_read_as_java_properties(broker_bootstrap, tmp_path):
    """Kafka's --command-config: a properties file, continuations and `key value` lines included."""
    config = tmp_path / "client.properties"
    config.write_text("# librdkafka settings\nclient.id tierlog-\\\n    cli-test\nsocket.timeout.ms: 10000\n")
    name = new_topic(broker_bootstrap)
    assert name in json_of(ok("topics", "list", "--json", "--command-config", str(config),
                              "--bootstrap-server", broker_bootstrap))
    config.write_text("client.id=\\uZZ\n")
    result = tierlog("topics", "list", "--command-config", str(config), "--bootstrap-server", broker_bootstrap)
    assert result.returncode == 2
    assert "Invalid \\u escape" in one_error_line(result)


def test_tables_are_tab_separated_in_a_pipe_and_drawn_on_a_terminal(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    name = new_topic(broker_bootstrap, partitions=2)
    title, header, *rows = ok("topics", "describe", name, *b).stdout.decode().splitlines()
    assert title.split("\t")[0] == f"Topic: {name}" and title.split("\t")[2] == "PartitionCount: 2"
    assert header.split("\t")[:2] == ["Partition", "Leader"]
    assert [row.split("\t")[0] for row in rows] == ["0", "1"]
    assert all(len(row.split("\t")) == len(header.split("\t")) for row in rows)
    drawn = _on_a_terminal("topics", "describe", name, *b)
    assert "┃" in drawn and "\t" not in drawn


def _on_a_terminal(*args: str) -> str:
    """Run `tierlog ARGS` with stdout on a pseudo-terminal; what it wrote there."""
    primary, secondary = pty.openpty()
    with subprocess.Popen([sys.executable, "-m", "tierlog.cli.main", *args], stdout=secondary,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL) as proc:
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:          # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.wait(RUN_TIMEOUT_S) == 0, proc.stderr.read()
    os.close(primary)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("args, pointer", [
    (["produce", "t", "--bogus"], "tierlog produce --help"),
    (["topics", "create", "t", "extra"], "tierlog topics create --help"),
    (["groups", "reset-offsets", "--group", "g", "--to-earliest", "--nope"], "tierlog groups reset-offsets --help"),
    (["consume"], "tierlog consume --help"),
    (["nosuchcommand"], "tierlog --help"),
])
def test_usage_errors_point_at_the_subcommands_help(args, pointer):
    result = tierlog(*args)
    assert result.returncode == 2
    assert one_error_line(result).endswith(f"(see '{pointer}')")


@pytest.mark.parametrize("args", [
    ["topics", "create", "{name}", "--config", "retention.ms=abc"],
    ["configs", "alter", "--topic", "{existing}", "--set", "min.cleanable.dirty.ratio=half"],
])
def test_a_bad_config_value_is_explained_in_kafkas_words(broker_bootstrap, args):
    existing = new_topic(broker_bootstrap)
    args = [a.format(name=f"cli-{uuid.uuid4().hex[:10]}", existing=existing) for a in args]
    error = one_error_line(tierlog(*args, "--bootstrap-server", broker_bootstrap))
    assert "not a number of type" in error and "INVALID_CONFIG" in error
    assert "literal" not in error and "float" not in error, error


def test_a_bad_remote_storage_setting_is_explained_without_python():
    result = tierlog("remote", "ls", "--storage", "s3://bucket/prefix",
                     "--set", "rsm.config.storage.s3.multipart.part.size.bytes=abc")
    assert one_error_line(result) == "rsm.config.storage.s3.multipart.part.size.bytes must be an integer, got 'abc'"


# --- kafka-console-consumer / -producer spellings ----------------------------------------------


def test_console_producer_and_consumer_spellings(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    name = new_topic(broker_bootstrap)
    ok("produce", "--topic", name, "--property", "parse.key=true", "--property", "key.separator=:", *b,
       stdin=b"a:1\nb:2\n")
    ok("produce", "--topic", name, "--property", "parse.key=true", *b, stdin=b"c\t3\n")   # a tab by default
    printed = ok("consume", "--topic", name, "--from-beginning", "--property", "print.key=true",
                 "--property", "print.partition=true", "--property", "print.offset=true", "--max-messages", "3", *b)
    assert printed.stdout.splitlines() == [b"Partition:0\tOffset:0\ta\t1", b"Partition:0\tOffset:1\tb\t2",
                                           b"Partition:0\tOffset:2\tc\t3"]
    stamped = ok("consume", name, "--property", "print.timestamp=true", "--property", "print.key=true",
                 "--property", "print.value=false", "--property", "key.separator=|", "--max-messages", "1", *b)
    timestamp, key = stamped.stdout.strip().split(b"|")
    assert timestamp.startswith(b"CreateTime:") and int(timestamp.split(b":")[1]) > 0 and key == b"a"


@pytest.mark.parametrize("args, expected", [
    (["consume", "t", "--topic", "t"], "give the topic once"),
    (["consume", "t", "--property", "print.nope=true"], "unknown property 'print.nope' (supported: print.timestamp"),
    (["consume", "t", "--property", "print.key=yes"], "print.key: expected true or false, got 'yes'"),
    (["consume", "t", "--format", "json", "--property", "print.key=true"], "not of json"),
    (["produce", "t", "--property", "parse.headers=true"], "unknown property 'parse.headers'"),
    (["produce", "t", "--property", "parse.key=true", "--property", "key.separator="], "must not be empty"),
    (["produce", "t", "--key-separator", ""], "must not be empty"),
])
def test_console_spelling_mistakes_are_usage_errors(args, expected):
    result = tierlog(*args, "--bootstrap-server", "127.0.0.1:1")
    assert result.returncode == 2
    assert expected in one_error_line(result)


# --- results as JSON, log dirs, column help -------------------------------------------------------


def test_every_command_that_prints_a_result_prints_it_as_json(broker_bootstrap, tmp_path):
    b = ["--bootstrap-server", broker_bootstrap]
    name = f"cli-{uuid.uuid4().hex[:10]}"
    assert json_of(ok("topics", "create", name, "--partitions", "2", "--json", *b)) == {"topic": name, "created": True}
    assert json_of(ok("topics", "create", name, "--if-not-exists", "--json", *b)) == {"topic": name, "created": False}
    assert json_of(ok("topics", "alter", name, "--partitions", "3", "--json", *b)) == {"topic": name, "partitions": 3}
    produced = json_of(ok("produce", name, "--partition", "1", "--json", *b, stdin=b"a\nb\nc\n"))
    assert produced == {"topic": name, "records": 3,
                        "partitions": [{"partition": 1, "records": 3, "first_offset": 0, "last_offset": 2}]}
    altered = json_of(ok("configs", "alter", "--topic", name, "--set", "retention.ms=600000", "--json", *b))
    assert altered == {"resource": "topic", "name": name, "set": {"retention.ms": "600000"}, "deleted": []}
    deleted = json_of(ok("delete-records", "--topic", name, "--partition", "1", "--offset", "2", "--json", *b))
    assert deleted == {"topic": name, "partition": 1, "low_watermark": 2}
    elected = json_of(ok("elect-leaders", "--preferred", "--topic", name, "--json", *b))
    assert elected["election_type"] == "PREFERRED" and elected["elected"] == [] and elected["failed"] == []
    assert sorted(p["partition"] for p in elected["not_needed"]) == [0, 1, 2]

    (tmp_path / "topics.json").write_text(json.dumps({"version": 1, "topics": [{"topic": name}]}))
    broker = json_of(ok("topics", "describe", name, "--json", *b))[0]["partitions"][0]["leader"]
    generated = json_of(ok("reassign", "--generate", "--topics-to-move-json-file", str(tmp_path / "topics.json"),
                           "--broker-list", str(broker), "--json", *b))
    assert generated["current"] == generated["proposed"]     # one broker: nowhere else to go
    (tmp_path / "plan.json").write_text(json.dumps(generated["proposed"]))
    plan = ["--reassignment-json-file", str(tmp_path / "plan.json"), "--json"]
    executed = json_of(ok("reassign", "--execute", *plan, *b))
    assert executed["current"] == generated["current"] and executed["refused"] == []
    assert sorted(p["partition"] for p in executed["started"]) == [0, 1, 2]
    poll_until(lambda: tierlog("reassign", "--verify", *plan, *b).returncode == 0, "the no-op plan to complete")
    verified = json_of(ok("reassign", "--verify", *plan, *b))
    assert {p["status"] for p in verified["partitions"]} == {"complete"}
    assert json_of(ok("reassign", "--list", "--json", *b)) == {"reassignments": []}

    gone = tierlog("topics", "delete", name, "no-such-topic-here", "--json", *b)
    assert json_of(gone) == {"deleted": [name], "errors": ["topic 'no-such-topic-here' does not exist"]}
    assert one_error_line(gone) == "topic 'no-such-topic-here' does not exist"


def test_log_dirs_describe_lists_each_replica_with_its_size(broker_bootstrap):
    b = ["--bootstrap-server", broker_bootstrap]
    name = new_topic(broker_bootstrap, partitions=2)
    ok("produce", name, "--partition", "1", *b, stdin=b"x" * 100 + b"\n")
    described = json_of(ok("log-dirs", "describe", "--topic-list", name, "--json", *b))
    assert described["version"] == 1
    [broker] = described["brokers"]
    [log_dir] = broker["logDirs"]
    assert log_dir["error"] is None and log_dir["totalBytes"] >= log_dir["usableBytes"] > 0
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    assert sorted(sizes) == [f"{name}-0", f"{name}-1"] and sizes[f"{name}-0"] == 0 and sizes[f"{name}-1"] > 100
    assert all(p["offsetLag"] == 0 and p["isFuture"] is False for p in log_dir["partitions"])

    header, *rows = ok("log-dirs", "describe", "--topic-list", name, *b).stdout.decode().splitlines()
    assert header.split("\t") == ["Broker", "LogDir", "Status", "Partition", "Size", "OffsetLag"]
    assert [row.split("\t")[3:5] for row in rows] == [[f"{name}-0", "0"], [f"{name}-1", str(sizes[f"{name}-1"])]]
    missing = one_error_line(tierlog("log-dirs", "describe", "--broker-list", "999", *b))
    assert missing.startswith("broker(s) 999 not in the cluster (brokers: ")


def test_topics_describe_help_explains_every_column_it_prints(broker_bootstrap):
    name = new_topic(broker_bootstrap)
    _, header, *_ = ok("topics", "describe", name, "--bootstrap-server", broker_bootstrap).stdout.decode().splitlines()
    help_text = ok("topics", "describe", "--help").stdout.decode()
    glossary = help_text.split("columns:", 1)[1]
    explained = {line.split()[0] for line in glossary.splitlines() if line.startswith("  ") and line.split()}
    columns = header.split("\t")
    assert "HighestTieredOffset" in columns and "LeaderEpoch" in columns
    assert set(columns) <= explained | {"Removing"}, set(columns) - explained
    for heading in ("LocalLog", "NotEligible", "LastKnownElr", "Offline", "Adding"):
        assert heading in explained
