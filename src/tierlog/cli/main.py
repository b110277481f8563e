"""The `tierlog` command: entry point, subcommand table and error handling.

Each subcommand lives in its own ``cmd_*`` module exposing
``register(subparsers)``, which adds a parser with ``set_defaults(func=run)``
where ``run(args) -> int`` is the exit status. Every handled error ends as
one line on stderr, ``tierlog: error: <message>``, exit status 1 (2 for a
command line that does not parse); Ctrl-C exits 130 quietly.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Sequence

from confluent_kafka import KafkaException

from tierlog.cli.errors import ERROR_PREFIX, CliError, describe_exception
from tierlog.cli.parser import CliArgumentParser
from tierlog.extras import MissingExtraError

__all__ = ["build_parser", "main"]

# Order is the order of `tierlog --help`. cmd_up and cmd_node are optional so
# the client commands work in an install (or checkout) that lacks them.
_COMMANDS = ("cmd_up", "cmd_node", "cmd_format", "cmd_topics", "cmd_configs", "cmd_users", "cmd_produce",
             "cmd_consume", "cmd_groups", "cmd_share_groups", "cmd_transactions", "cmd_perf", "cmd_metadata", "cmd_elect_leaders",
             "cmd_reassign", "cmd_remote", "cmd_table", "cmd_delete_records", "cmd_acls",
             "cmd_log_dirs")
_OPTIONAL = frozenset({"cmd_up", "cmd_node", "cmd_format"})
_SIGINT_EXIT = 130
_SIGPIPE_EXIT = 141

_DESCRIPTION = """\
tierlog: a Kafka-compatible, replicated, tiered log.

The client commands speak the Kafka protocol, so they work against tierlog and
any Kafka-compatible broker. Run 'tierlog COMMAND --help' for a command's options.
Tables are drawn on a terminal and tab-separated lines otherwise (for awk, cut).
"""

_EPILOG = """\
a first session:
  tierlog up                                      # start a local cluster
  tierlog topics create greetings --partitions 3
  printf 'alice:hello\\nbob:hi\\n' | tierlog produce greetings --key-separator :
  tierlog consume greetings --format kv --timeout-ms 2000
  tierlog consume greetings --group readers --timeout-ms 2000   # as a group member
  tierlog groups describe readers                  # offsets and lag per partition
  tierlog perf produce --topic greetings --num-records 100000 --record-size 100

connection options (on every client command):
  --bootstrap-server HOST:PORT   default: $TIERLOG_BOOTSTRAP, else 127.0.0.1:9092
  --command-config KEY=VALUE     client setting, or a properties file (security.protocol, ssl.*, sasl.*;
                                 `tierlog up --security sasl_ssl` writes one: tierlog-data/client.properties)
  --timeout SECONDS              give up waiting for the cluster after this long
"""


def _register(subparsers, names: Sequence[str]) -> int:
    """Register the commands of ``names`` that are installed; how many were."""
    registered = 0
    for name in names:
        try:
            module = importlib.import_module(f"tierlog.cli.{name}")
        except ImportError as exc:
            if name in _OPTIONAL and exc.name == f"tierlog.cli.{name}":
                continue
            raise
        module.register(subparsers)
        registered += 1
    return registered


def build_parser(command: str | None = None) -> CliArgumentParser:
    """The parser of every command, or of ``command`` alone when that names one: importing every
    command's module cost each process (a CLI run, every node) about 0.15 s of CPU more. A name that
    is not a command (or ``--help``) gets them all, for the list of choices."""
    parser = CliArgumentParser(prog="tierlog", description=_DESCRIPTION, epilog=_EPILOG)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    named = [m for m in _COMMANDS if command and m == f"cmd_{command.replace('-', '_')}"]
    if not (named and _register(subparsers, named)):
        _register(subparsers, _COMMANDS)
    return parser


def _error(message: str) -> None:
    sys.stderr.write(f"{ERROR_PREFIX}{' '.join(message.split())}\n")
    sys.stderr.flush()


def _quiet_broken_pipe() -> int:
    """The reader of stdout went away (``| head``): stop without a message."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return _SIGPIPE_EXIT


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; ``argv`` None: the program's own arguments, and the process ends after it."""
    try:
        words = sys.argv[1:] if argv is None else list(argv)
        args = build_parser(words[0] if words else None).parse_args(words)
        return args.func(args)
    except CliError as exc:
        _error(exc.message)
        return exc.exit_code
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except (KafkaException, OSError, ValueError, MissingExtraError) as exc:
        _error(describe_exception(exc))
        return 1
    except KeyboardInterrupt:
        return _SIGINT_EXIT
    finally:
        if argv is None:
            _skip_the_last_collection()


def _skip_the_last_collection() -> None:
    """Interpreter shutdown ran a full garbage collection over everything a node or command had
    built: 1-2 s of CPU per process on a busy machine (py-spy: the main thread in
    ``gc_collect_main`` after the node had logged "stopped"). Frozen, the heap is left to
    reference counting; no collection is needed, the process is ending."""
    gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
