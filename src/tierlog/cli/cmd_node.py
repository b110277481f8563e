"""``tierlog node --config server.properties``: run one node in the foreground."""
from __future__ import annotations

import logging
import os

from tierlog.config import ConfigError, NodeConfig
from tierlog.parent_watch import exit_with_parent

from .errors import CliError
from .node_log import NODE_LOG_BACKUPS, NODE_LOG_MAX_BYTES, log_to_file, log_to_stderr
from .options import non_negative_int, positive_int

__all__ = ["register", "run"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "node", help="run one node from a server.properties file",
        description="Run one tierlog node in the foreground until Ctrl-C or SIGTERM. "
                    "Prints 'node <id> roles=<roles> pid=<pid> listen=<host:port>' once it accepts clients, "
                    "with ' metrics=<host:port>' when metrics.prometheus.listener is set (Prometheus "
                    "scrapes http://<host:port>/metrics).")
    p.add_argument("--config", required=True, metavar="FILE", help="Kafka-style server.properties")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key (repeatable)")
    p.add_argument("--log-level", default=os.environ.get("TIERLOG_LOG_LEVEL", "INFO"),
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log level (default INFO)")
    p.add_argument("--log-file", metavar="FILE",
                   help="log (and stderr) to FILE, rotated by size like Kafka's server.log "
                        "(default: stderr, not rotated)")
    p.add_argument("--log-file-max-bytes", type=positive_int, default=NODE_LOG_MAX_BYTES, metavar="BYTES",
                   help="size at which FILE becomes FILE.1, FILE.1 becomes FILE.2, ...")
    p.add_argument("--log-file-backups", type=non_negative_int, default=NODE_LOG_BACKUPS, metavar="N",
                   help="rotated files kept (FILE.1 .. FILE.N)")
    p.set_defaults(func=run)


def parse_overrides(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--set expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def run(args) -> int:
    from tierlog.node import NodeFailure, run_node
    exit_with_parent()
    if args.log_file:
        log_to_file(args.log_file, args.log_level, args.log_file_max_bytes, args.log_file_backups)
    else:
        log_to_stderr(args.log_level)
    try:
        config = NodeConfig.from_file(args.config, parse_overrides(args.set))
    except ConfigError as e:
        raise CliError(str(e)) from None
    for key in config.unknown:
        logging.getLogger("tierlog.config").warning("unknown config %s ignored", key)

    def ready(node) -> None:
        host, port = node.client_address
        metrics = "" if node.metrics_endpoint is None else " metrics={}:{}".format(*node.metrics_endpoint.bound)
        print(f"node {config.node_id} roles={','.join(config['process.roles'])} pid={os.getpid()} "
              f"listen={host}:{port}{metrics}", flush=True)

    try:
        run_node(config, ready)
    except (ConfigError, NodeFailure) as e:
        raise CliError(str(e)) from None
    except OSError as e:
        raise CliError(f"node {config.node_id}: {e.strerror or e}") from None
    return 0
