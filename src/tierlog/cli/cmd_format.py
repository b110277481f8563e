"""``tierlog format --config server.properties [--add-scram 'SCRAM-SHA-512=[name=admin,password=...]']
[--standalone | --initial-controllers ID@HOST:PORT:DIR_ID,... | --no-initial-controllers]``:
the bootstrap records of a new cluster (Kafka's ``kafka-storage.sh format --add-scram``, KIP-900)
and, for a dynamic controller quorum (KIP-853), the node's meta.properties and the bootstrap
checkpoint with the initial voters (cli/quorum_format.py).

Writes ``<metadata dir>/bootstrap.records`` (metadata/bootstrap.py): one
UserScramCredentialRecord per credential, salted and hashed here (salt from ``secrets``),
never the password. The first active controller of the new cluster writes them to the
metadata log before anything else, so SCRAM users, the brokers' own included, can log in
from the start. Format every controller with the same credentials. A node whose metadata
log already holds data is refused: its cluster exists, use ``tierlog users`` there.
"""
from __future__ import annotations

from pathlib import Path

from tierlog.config import ConfigError, NodeConfig
from tierlog.metadata.bootstrap import write_bootstrap
from tierlog.metadata.scram import new_credential
from tierlog.metadata.scram_records import UserScramCredentialRecord
from tierlog.storage.meta_properties import kafka_uuid_str

from .cmd_node import parse_overrides
from .errors import CliError
from .quorum_format import QuorumFormat, format_quorum
from .scram_config import ScramEntry, parse_scram_config

__all__ = ["format_node", "register", "run", "scram_records"]

METADATA_LOG = "__cluster_metadata-0"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "format", help="prepare a new node: SCRAM users, a dynamic controller quorum's first voters",
        description="Prepare a node of a new cluster (like kafka-storage.sh format): write the SCRAM "
                    "credentials the first active controller puts in the metadata log before anything "
                    "else, into <metadata.log.dir or first log dir>/bootstrap.records (passwords are "
                    "salted and hashed here; the file holds no password); and for a dynamic controller "
                    "quorum (KIP-853, nodes configured with controller.quorum.bootstrap.servers) "
                    "meta.properties with the metadata dir's directory.id and, with --standalone or "
                    "--initial-controllers, the bootstrap checkpoint holding the first voter set.")
    p.add_argument("--config", required=True, metavar="FILE", help="the node's server.properties")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key")
    p.add_argument("--add-scram", action="append", default=[],
                   metavar="'SCRAM-SHA-512=[name=USER,password=P]'",
                   help="a SCRAM credential (optionally iterations=N); repeatable")
    quorum = p.add_mutually_exclusive_group()
    quorum.add_argument("--standalone", action="store_true",
                        help="dynamic quorum: this controller alone is the first voter")
    quorum.add_argument("--initial-controllers", metavar="ID@HOST:PORT:DIRECTORY_ID,...",
                        help="dynamic quorum: the first voters (format each of them with the same list)")
    quorum.add_argument("--no-initial-controllers", action="store_true",
                        help="dynamic quorum: a node that joins a running cluster (a controller is then "
                             "added with `tierlog metadata quorum add-controller`)")
    p.set_defaults(func=run)


def scram_records(entries: list[ScramEntry]) -> list[UserScramCredentialRecord]:
    records = []
    for e in entries:
        assert e.name is not None, "format's entries are parsed with need_name"
        c = new_credential(e.mechanism, e.password, e.iterations)
        records.append(UserScramCredentialRecord(e.name, e.mechanism, c.salt, c.stored_key, c.server_key,
                                                 c.iterations))
    return records


def format_node(config: NodeConfig, entries: list[ScramEntry]) -> Path:
    """Write the bootstrap file of ``config``'s node (CliError: its metadata log has data)."""
    metadata_dir = Path(config["metadata.log.dir"] or config.log_dirs[0])
    log_dir = metadata_dir / METADATA_LOG
    if log_dir.is_dir() and any(p.suffix == ".log" and p.stat().st_size for p in log_dir.iterdir()):
        raise CliError(f"{log_dir} already holds metadata: this node's cluster exists, "
                       "so bootstrap records would never be read (add users with `tierlog users`)")
    return write_bootstrap(metadata_dir, scram_records(entries))


def run(args) -> int:
    try:
        config = NodeConfig.from_file(args.config, parse_overrides(args.set))
    except ConfigError as e:
        raise CliError(str(e)) from None
    how = QuorumFormat(args.standalone, args.initial_controllers, args.no_initial_controllers)
    if not args.add_scram and not how.chosen:
        raise CliError("nothing to format: give --add-scram and/or one of --standalone, "
                       "--initial-controllers, --no-initial-controllers")
    entries = [e for text in args.add_scram for e in parse_scram_config(text, "--add-scram", need_name=True)]
    if entries:
        path = format_node(config, entries)
        print(f"wrote {len(entries)} SCRAM credential(s) to {path}")
    if how.chosen:
        cluster_id, dir_id, voters = format_quorum(config, how)
        print(f"formatted node {config.node_id} of cluster {cluster_id}: directory.id={kafka_uuid_str(dir_id)}"
              + ("" if voters is None else f" initial voters={','.join(str(v.voter_id) for v in voters)}"))
    return 0
