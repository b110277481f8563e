"""kafka-console-consumer's and kafka-console-producer's spellings on `tierlog consume` / `produce`.

- ``--topic T`` as well as the positional ``TOPIC`` (one of them, not both);
- ``--from-beginning``: ``--from earliest`` (consume);
- ``--property KEY=VALUE``, repeatable. consume takes the DefaultMessageFormatter's
  ``print.timestamp``, ``print.partition``, ``print.offset``, ``print.headers``,
  ``print.key``, ``print.value`` (true/false), ``key.separator``,
  ``headers.separator``, ``headers.key.separator`` and ``null.literal``; produce the
  LineMessageReader's ``parse.key`` (true/false) and ``key.separator`` (default a tab).
  Any other property is a usage error naming the ones supported.

Each ``add_*`` function adds the options to a subcommand's parser and a finisher
that turns them into the arguments the command already has (``args.topic``,
``args.start``, the record layout, ``args.key_separator``).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from tierlog.cli.options import key_value
from tierlog.cli.parser import SubcommandParser
from tierlog.cli.record_format import layout_of
from tierlog.cli.start_position import StartPosition

__all__ = ["add_consumer_properties", "add_from_beginning", "add_producer_properties", "add_topic"]

_BOOLEANS = {"true": True, "false": False}
_CONSUMER_FLAGS = {"print.timestamp": "print_timestamp", "print.partition": "print_partition",
                   "print.offset": "print_offset", "print.headers": "print_headers", "print.key": "print_key",
                   "print.value": "print_value"}
_CONSUMER_TEXTS = {"key.separator": "key_separator", "headers.separator": "headers_separator",
                   "headers.key.separator": "headers_key_separator", "null.literal": "null_literal"}
_PRODUCER_PROPERTIES = ("parse.key", "key.separator")
_DEFAULT_KEY_SEPARATOR = "\t"


def add_topic(parser: SubcommandParser, help_text: str) -> None:
    """``TOPIC`` or ``--topic TOPIC`` into ``args.topic``."""
    parser.add_argument("topic", metavar="TOPIC", nargs="?", help=help_text)
    parser.add_argument("--topic", dest="topic_option", metavar="TOPIC",
                        help="the topic, as kafka-console-consumer/-producer spell it")
    parser.add_finisher(_one_topic)


def _one_topic(args: argparse.Namespace) -> None:
    given = [t for t in (args.topic, args.topic_option) if t is not None]
    if len(given) != 1:
        raise argparse.ArgumentTypeError("give the topic once: as TOPIC or as --topic TOPIC")
    args.topic = given[0]
    del args.topic_option


def add_from_beginning(parser: SubcommandParser, earliest: StartPosition) -> None:
    parser.add_argument("--from-beginning", dest="start", action="store_const", const=earliest,
                        help="same as --from earliest (kafka-console-consumer's spelling)")


def _properties_option(parser: SubcommandParser, names: str) -> None:
    parser.add_argument("--property", dest="properties", type=key_value, action="append", default=[],
                        metavar="KEY=VALUE", help=f"kafka-console-* property: {names}; repeatable")


def _boolean(key: str, text: str) -> bool:
    value = _BOOLEANS.get(text.strip().lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"--property {key}: expected true or false, got {text!r}")
    return value


def _unknown(key: str, supported) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"--property: unknown property {key!r} (supported: {', '.join(supported)})")


def add_consumer_properties(parser: SubcommandParser) -> None:
    """``--property`` of kafka-console-consumer into ``args.layout`` (from --format / --print-headers)."""
    _properties_option(parser, ", ".join([*_CONSUMER_FLAGS, *_CONSUMER_TEXTS]))
    parser.add_finisher(_consumer_layout)


def _consumer_layout(args: argparse.Namespace) -> None:
    changes: dict[str, Any] = {}        # ConsoleLayout field -> value (a flag's bool, a text's bytes)
    for key, text in args.properties:
        if key in _CONSUMER_FLAGS:
            changes[_CONSUMER_FLAGS[key]] = _boolean(key, text)
        elif key in _CONSUMER_TEXTS:
            changes[_CONSUMER_TEXTS[key]] = text.encode()
        else:
            raise _unknown(key, [*_CONSUMER_FLAGS, *_CONSUMER_TEXTS])
    if changes and args.format == "json":
        raise argparse.ArgumentTypeError("--property sets the layout of the value and kv formats, not of json")
    args.layout = dataclasses.replace(layout_of(args.format, args.print_headers), **changes)


def add_producer_properties(parser: SubcommandParser) -> None:
    """``--property parse.key=true`` (and ``key.separator``) into ``args.key_separator``."""
    _properties_option(parser, ", ".join(_PRODUCER_PROPERTIES))
    parser.add_finisher(_producer_key_separator)


def _producer_key_separator(args: argparse.Namespace) -> None:
    properties = dict(args.properties)
    unknown = [key for key in properties if key not in _PRODUCER_PROPERTIES]
    if unknown:
        raise _unknown(unknown[0], _PRODUCER_PROPERTIES)
    if not _boolean("parse.key", properties.get("parse.key", "false")):
        return
    separator = properties.get("key.separator", _DEFAULT_KEY_SEPARATOR)
    if not separator:
        raise argparse.ArgumentTypeError("--property key.separator: must not be empty")
    if args.key_separator not in (None, separator):
        raise argparse.ArgumentTypeError("--key-separator and --property key.separator disagree")
    args.key_separator = separator

