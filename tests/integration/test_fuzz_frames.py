"""Seeded fuzzing of both listeners: the node answers every request its codec can read, logs no
traceback and keeps serving (issue 21).

For every API key and version a node advertises (ApiVersions on its broker and its controller
listener), ``FRAMES_PER_VERSION`` frames from ``fuzz.frames`` (random schema-shaped bodies, half of
them with bytes flipped, cut or appended) go over one connection per listener. A frame tierlog's codec
can decode must get its answer (the correlation id back) on an open connection; only an
undecodable one may close it. ``fuzz_corpus.json`` keeps frames that once broke a handler; they are
replayed first. ``TIERLOG_FUZZ_SEED`` / ``TIERLOG_FUZZ_FRAMES`` change the run; a failure names the
API, version and the frame's hex, to be added to the corpus.
"""
import json
import os
import random
import socket
import struct
from pathlib import Path

import pytest
from clients import consume_all, create_topic, produce_all
from fuzz import decoded, frames, holds_long

from tierlog.protocol import (
    ApiKey,
    decode_request_header,
    decode_response,
    encode_request,
)

pytestmark = pytest.mark.cluster(controllers=1, brokers=1)
SEED = int(os.environ.get("TIERLOG_FUZZ_SEED", "21"))
FRAMES_PER_VERSION = int(os.environ.get("TIERLOG_FUZZ_FRAMES", "40"))
CORPUS = Path(__file__).with_name("fuzz_corpus.json")
ANSWER_TIMEOUT_S = 15
SKIPPED = {ApiKey.API_VERSIONS}     # answered before anything else; the liveness probe itself


class Listener:
    """A connection that reconnects after the node closed it."""

    def __init__(self, port: int):
        self.port, self.sock = port, None

    def exchange(self, frame: bytes) -> bytes | None:
        """The answer's bytes; None if the node closed the connection instead."""
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=ANSWER_TIMEOUT_S)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        try:
            return self._read(struct.unpack(">i", self._read(4))[0])
        except ConnectionError:
            self.close()
            return None

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return bytes(buf)

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def advertised(port: int) -> list[tuple[int, int]]:
    conn = Listener(port)
    answer = conn.exchange(encode_request(ApiKey.API_VERSIONS, 0, 1, "fuzz", {}))
    conn.close()
    keys = decode_response(ApiKey.API_VERSIONS, 0, answer)[1]["ApiKeys"]
    return [(k["ApiKey"], v) for k in keys for v in range(k["MinVersion"], k["MaxVersion"] + 1)
            if k["ApiKey"] not in SKIPPED]


def answered_at_once(frame: bytes, body: dict) -> bool:
    """Not Produce with acks=0 (no answer) nor a request that may be held long."""
    header, _ = decode_request_header(frame)
    return not (header.api_key == ApiKey.PRODUCE and body.get("Acks") == 0) and not holds_long(body)


def check(conn: Listener, frame: bytes, what: str) -> None:
    body = decoded(frame)
    readable = body is not None
    if readable and not answered_at_once(frame, body):
        return
    try:
        answer = conn.exchange(frame)
    except TimeoutError:
        pytest.fail(f"{what}: no answer within {ANSWER_TIMEOUT_S}s to {frame.hex()}")
    header, _ = decode_request_header(frame)
    if answer is None:
        assert not readable, f"{what}: connection closed for a decodable request {frame.hex()}"
        return
    assert struct.unpack_from(">i", answer)[0] == header.correlation_id, f"{what}: {frame.hex()}"


def assert_clean(nodes) -> None:
    for n in nodes:
        text = n.log_path.read_text(errors="replace")
        assert "Traceback" not in text and "unexpected error" not in text, n.log_tail(80)
        assert n.alive()


def test_corpus_then_seeded_frames_on_both_listeners(cluster):
    listeners = {"controller": cluster.controllers[0], "broker": cluster.brokers[0]}
    corpus = json.loads(CORPUS.read_text())
    for entry in corpus:
        conn = Listener(listeners[entry["listener"]].port)
        check(conn, bytes.fromhex(entry["frame"]), f"corpus: {entry['found']}")
        conn.close()
    for name, node in listeners.items():
        conn = Listener(node.port)
        for api_key, version in advertised(node.port):
            rng = random.Random(f"{SEED}-{name}-{api_key}-{version}")
            for frame in frames(api_key, version, rng, FRAMES_PER_VERSION, correlation_id=1000):
                check(conn, frame, f"{name} api {api_key} v{version} seed {SEED}")
        conn.close()
        assert advertised(node.port)            # still serving
    create_topic(cluster.bootstrap, "after-fuzz")       # and a real client still works end to end
    produce_all(cluster.bootstrap, "after-fuzz", [(0, None, b"v%d" % i, None, None) for i in range(10)])
    assert len(consume_all(cluster.bootstrap, "after-fuzz", 1, 10)) == 10
    assert_clean(cluster.nodes)
