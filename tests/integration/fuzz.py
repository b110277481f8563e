"""Seeded request frames for fuzzing a node's listeners (test_fuzz_frames.py).

``frames(api_key, version, rng, count)`` yields request frames (without the size
prefix), each with an intact header: half are bodies of random field values that
follow the schema (extreme integers, nulls where nullable, reserved and overlong
names, garbage record bytes), half are such bodies with bytes flipped, cut or
appended.  ``decoded(frame)`` is the body as tierlog's own codec reads it (None
if it cannot): a node must answer every decodable frame (an error code at
worst) and may close the connection only for the others.  Wait and timeout
fields are kept short (``holds_long`` tells a frame whose mutation made one
long: a long poll is legitimately held that long, so the test does not send it).
"""
from __future__ import annotations

import random
from collections.abc import Iterator

from tierlog.protocol import (
    APIS,
    ProtocolError,
    decode_request,
    decode_request_header,
    encode_request,
)
from tierlog.protocol.schema import ArrayOf, Struct

INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
STRINGS = ("", "a", "fuzz-topic", "__cluster_metadata", "__consumer_offsets", "..", "bad/name", "x" * 300,
           "\u00e9\u4e2d")
MAX_DEPTH = 3
WAIT_FIELDS = ("WaitMs", "TimeoutMs", "timeoutMs")   # how long a request may be held: kept short
LONG_WAIT_MS = 1000


def frames(api_key: int, version: int, rng: random.Random, count: int, correlation_id: int = 0) -> Iterator[bytes]:
    spec = APIS[api_key]
    for i in range(count):
        body = random_struct(spec.request, version, rng, 0)
        frame = encode_request(api_key, version, correlation_id + i, "fuzz", body)
        yield frame if i % 2 == 0 else mutate(frame, rng)


def random_struct(struct_: Struct, version: int, rng: random.Random, depth: int) -> dict:
    out = {}
    for field in struct_.fields_in(version):
        if field.nullable_in(version) and rng.random() < 0.15:
            out[field.name] = None
        elif field.name.endswith(WAIT_FIELDS):
            out[field.name] = rng.choice((-1, 0, 1, 100))
        else:
            out[field.name] = random_value(field.type, version, rng, depth)
    return out


def random_value(type_, version: int, rng: random.Random, depth: int):
    if isinstance(type_, Struct):
        return random_struct(type_, version, rng, depth + 1)
    if isinstance(type_, ArrayOf):
        n = 0 if depth >= MAX_DEPTH else rng.choice((0, 1, 1, 2, 3))
        return [random_value(type_.element, version, rng, depth + 1) for _ in range(n)]
    if type_ in INT_RANGES:
        bits = INT_RANGES[type_]
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return rng.choice((0, 0, 1, -1, 2, lo, hi, rng.randint(lo, hi)))
    if type_ == "uint16":
        return rng.choice((0, 1, 65535, rng.randint(0, 65535)))
    if type_ == "float64":
        return rng.choice((0.0, -1.0, 1e308, rng.random()))
    if type_ == "bool":
        return rng.random() < 0.5
    if type_ == "string":
        return rng.choice(STRINGS)
    if type_ == "uuid":
        return rng.choice((bytes(16), bytes(15) + b"\x01", rng.randbytes(16)))
    if type_ == "bytes":
        return rng.randbytes(rng.choice((0, 1, 8, 61)))
    if type_ == "records":
        return rng.choice((None, b"", rng.randbytes(rng.choice((12, 61, 200)))))
    raise AssertionError(f"no generator for {type_!r}")


def mutate(frame: bytes, rng: random.Random) -> bytes:
    """The same header, the body with a few bytes flipped, cut short or extended."""
    _, offset = decode_request_header(frame)
    head, body = frame[:offset], bytearray(frame[offset:])
    how = rng.randrange(3)
    if how == 0 and body:
        for _ in range(rng.randint(1, 4)):
            body[rng.randrange(len(body))] = rng.randrange(256)
    elif how == 1 and body:
        del body[rng.randrange(len(body)):]
    else:
        body += rng.randbytes(rng.randint(1, 16))
    return head + bytes(body)


def decoded(frame: bytes) -> dict | None:
    """The body as tierlog's codec reads it; None if it cannot."""
    header, offset = decode_request_header(frame)
    try:
        return decode_request(header.api_key, header.api_version, frame, offset)
    except ProtocolError:
        return None


def holds_long(body) -> bool:
    """Whether the request may legitimately be held past LONG_WAIT_MS (a long poll, a rebalance)."""
    if isinstance(body, dict):
        return any((k.endswith(WAIT_FIELDS) and isinstance(v, int) and v > LONG_WAIT_MS) or holds_long(v)
                   for k, v in body.items())
    if isinstance(body, list):
        return any(holds_long(v) for v in body)
    return False
