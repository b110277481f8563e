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

The value and kv formats are two cases of kafka-console-consumer's line
(Kafka's DefaultMessageFormatter), which ``ConsoleLayout`` describes in full:
``[CreateTime:MS<SEP>][Partition:P<SEP>][Offset:O<SEP>][HEADERS<SEP>][KEY<SEP>]VALUE``,
each part there when its ``print.*`` property is true, SEP its ``key.separator``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Message

__all__ = ["FORMATS", "ConsoleLayout", "console_formatter", "formatter", "layout_of"]

FORMATS = ("value", "kv", "json")
_NULL = b"null"
_TAB = b"\t"
_TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}


@dataclass(frozen=True)
class ConsoleLayout:
    """The parts of a kafka-console-consumer line and its separators (its ``--property`` names)."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = _TAB
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_literal: bytes = _NULL


def _timestamp_part(message: Message, layout: ConsoleLayout) -> bytes:
    kind, ms = message.timestamp()
    name = _TIMESTAMP_TYPES.get(kind)
    return b"NO_TIMESTAMP" if name is None else f"{name}:{ms}".encode()


def _headers(message: Message) -> list[tuple[str, bytes | None]]:
    """A consumed record's headers, in order (confluent-kafka's type also admits what a producer
    may give: a dict, str values)."""
    headers = message.headers() or []
    pairs = headers.items() if isinstance(headers, dict) else headers
    return [(k, v.encode() if isinstance(v, str) else v) for k, v in pairs]


def _headers_part(message: Message, layout: ConsoleLayout) -> bytes:
    headers = _headers(message)
    if not headers:
        return b"NO_HEADERS"
    null = layout.null_literal
    return layout.headers_separator.join(k.encode() + layout.headers_key_separator + (null if v is None else v)
                                         for k, v in headers)


def _or_null(data: bytes | None, layout: ConsoleLayout) -> bytes:
    return layout.null_literal if data is None else data


_PARTS: tuple[tuple[str, Callable[[Message, ConsoleLayout], bytes]], ...] = (
    ("print_timestamp", _timestamp_part),
    ("print_partition", lambda m, _layout: f"Partition:{m.partition()}".encode()),
    ("print_offset", lambda m, _layout: f"Offset:{m.offset()}".encode()),
    ("print_headers", _headers_part),
    ("print_key", lambda m, layout: _or_null(m.key(), layout)),
    ("print_value", lambda m, layout: _or_null(m.value(), layout)),
)


def console_formatter(layout: ConsoleLayout) -> Callable[[Message], bytes]:
    """The line (without newline) kafka-console-consumer prints for one record with ``layout``."""
    parts = [part for flag, part in _PARTS if getattr(layout, flag)]
    separator = layout.key_separator
    return lambda message: separator.join(part(message, layout) for part in parts)


def _put_bytes(target: dict[str, object], field: str, data: bytes | None) -> None:
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
    record: dict[str, object] = {
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "timestamp": ms if kind in _TIMESTAMP_TYPES else None,
        "timestamp_type": _TIMESTAMP_TYPES.get(kind),
    }
    _put_bytes(record, "key", message.key())
    _put_bytes(record, "value", message.value())
    headers = []
    for name, data in _headers(message):
        header: dict[str, object] = {"key": name}
        _put_bytes(header, "value", data)
        headers.append(header)
    record["headers"] = headers
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def formatter(name: str, layout: ConsoleLayout) -> Callable[[Message], bytes]:
    """The line (without newline) for one record: ``json``, or the console line of ``layout``."""
    return _as_json if name == "json" else console_formatter(layout)


def layout_of(name: str, print_headers: bool) -> ConsoleLayout:
    """The console layout the ``value`` and ``kv`` formats stand for."""
    return ConsoleLayout(print_key=name == "kv", print_headers=print_headers)
