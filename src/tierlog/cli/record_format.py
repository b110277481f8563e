"""How `tierlog consume` prints a record: one line of bytes per record.

``value``  the value as it is (binary-safe), ``null`` for a null value.
``kv``     ``KEY<TAB>VALUE``, ``null`` for a null key or value.
``json``   one JSON object per line::

    {"topic": "t", "partition": 0, "offset": 42, "timestamp": 1700000000000,
     "timestamp_type": "CreateTime", "key": "k", "value": "v",
     "headers": [{"key": "h", "value": "1"}]}

  ``key``/``value`` (and each header's ``value``) are text when the bytes are
  valid UTF-8, or null when the field is null. Bytes that are not UTF-8 are
  given as base64 in ``key_b64``/``value_b64`` instead, and the text field is
  left out.

With ``--print-headers``, the value and kv formats start each line with the
headers, ``h1:v1,h2:v2<TAB>`` (``NO_HEADERS`` when there are none), as
kafka-console-consumer's ``print.headers`` does.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Message

__all__ = ["FORMATS", "formatter"]

FORMATS = ("value", "kv", "json")
_NULL = b"null"
_TAB = b"\t"
_TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}


def _or_null(data: bytes | None) -> bytes:
    return _NULL if data is None else data


def _headers_prefix(message: Message) -> bytes:
    headers = message.headers()
    if not headers:
        return b"NO_HEADERS" + _TAB
    return b",".join(k.encode() + b":" + _or_null(v) for k, v in headers) + _TAB


def _put_bytes(target: dict, field: str, data: bytes | None) -> None:
    """Set target[field] to text, or target[field + "_b64"] to base64."""
    if data is None:
        target[field] = None
        return
    try:
        target[field] = data.decode("utf-8")
    except UnicodeDecodeError:
        target[field + "_b64"] = base64.b64encode(data).decode("ascii")


def _as_json(message: Message) -> bytes:
    kind, ms = message.timestamp()
    record = {
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "timestamp": ms if kind in _TIMESTAMP_TYPES else None,
        "timestamp_type": _TIMESTAMP_TYPES.get(kind),
    }
    _put_bytes(record, "key", message.key())
    _put_bytes(record, "value", message.value())
    headers = []
    for name, data in message.headers() or ():
        header = {"key": name}
        _put_bytes(header, "value", data)
        headers.append(header)
    record["headers"] = headers
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _as_value(message: Message) -> bytes:
    return _or_null(message.value())


def _as_kv(message: Message) -> bytes:
    return _or_null(message.key()) + _TAB + _or_null(message.value())


def formatter(name: str, print_headers: bool) -> Callable[[Message], bytes]:
    """The line (without newline) for one record, in format `name`."""
    if name == "json":
        return _as_json
    body = _as_kv if name == "kv" else _as_value
    if not print_headers:
        return body
    return lambda message: _headers_prefix(message) + body(message)
