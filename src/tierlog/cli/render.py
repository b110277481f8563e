"""Output helpers: rich tables for people, JSON for scripts, notes on stderr.

Results go to stdout; progress and confirmations ("produced 3 records") go to
stderr so that stdout can be piped. A table on a terminal is drawn by rich; on
anything else (a pipe, a file) it is plain text for awk and cut: a header line,
then one line per row, cells separated by tabs (tabs and line breaks inside a
cell become spaces).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["add_json_option", "epoch_ms_text", "make_table", "note", "print_json", "print_result", "print_table",
           "stdout_console"]

_PIPE_WIDTH = 200  # rich uses 80 columns when stdout is not a terminal


def stdout_console() -> Console:
    """A console on stdout; wide and colourless when piped."""
    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, width=_PIPE_WIDTH, no_color=True)


def make_table(*columns: str, title: str | None = None) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def print_table(table: Table) -> None:
    if sys.stdout.isatty():
        stdout_console().print(table)
        return
    columns = [[_plain(column.header), *(_plain(cell) for cell in column.cells)] for column in table.columns]
    sys.stdout.write("".join("\t".join(row) + "\n" for row in zip(*columns, strict=True)))
    sys.stdout.flush()


def _plain(cell) -> str:
    return " ".join(str(cell).replace("\t", " ").splitlines())


def epoch_ms_text(epoch_ms: int) -> str:
    """A Kafka timestamp (ms since the epoch) as a UTC time people read, e.g. 2026-11-29T02:30:01.250Z;
    a negative one (Kafka's -1: none) as "-"."""
    if epoch_ms < 0:
        return "-"
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def print_json(value: Any) -> None:
    """One JSON document on one line of stdout."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def note(message: str) -> None:
    """A one-line message for the person at the terminal, on stderr."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def add_json_option(parser, what: str) -> None:
    """``--json`` on a command that prints a result: ``what`` names the document it prints."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as one JSON document")


def print_result(args, text: str | list[str], document: Any) -> None:
    """A command's result: ``document`` as one line of JSON with ``--json``, else ``text``'s lines."""
    if getattr(args, "json", False):
        print_json(document)
        return
    for line in [text] if isinstance(text, str) else text:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
