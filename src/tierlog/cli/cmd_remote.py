"""`tierlog remote ls` / `verify`: what tiered storage holds, read straight from the store.

No broker is involved: the command lists the objects under ``--storage`` (a
directory, or ``s3://BUCKET/PREFIX``) and reads each segment's manifest, so it
works on a stopped cluster or a bucket copied elsewhere. Other S3 settings
(endpoint, region, path-style) come from ``--set rsm.config.storage.s3.*=...``;
credentials from boto3's usual chain.

The table has one row per segment: finished ones (manifest present) with their
offset range, leader epochs, max timestamp and size; unfinished ones (an upload
that did not finish, or a delete that stopped halfway) marked as such.
``--json`` prints one object::

    {"storage": "...", "partitions": [{"topic": "t", "partition": 0, "topic_id": "...",
      "start_offset": 0, "end_offset": 999, "size_bytes": 1048576,
      "segments": [{"segment_id": "...", "start_offset": 0, "end_offset": 999,
                    "leader_epochs": [[0, 0]], "max_timestamp_ms": ..., "size_bytes": ...}],
      "unfinished": [{"segment_id": "...", "start_offset": 1000, "objects": [".log"],
                      "reason": "no manifest"}]}]}

``verify`` checks every finished segment's objects against the size and
CRC-32C its manifest recorded, and the offsets between segments
(``tiered.verify``): one row per problem (missing, corrupt, gap) with the
partition, offsets, object key and the ``tierlog delete-records`` command that
moves the log start past it; exit 1 when there is any, 0 when none.

Encrypted stores (``rsm.config.encryption.*``): ``ls`` needs no key (manifests
hold no record bytes; the table's STATE and the JSON's ``key_id`` say which key
each segment is encrypted under). ``verify`` needs every key the segments name,
given as ``--key-file ID=FILE`` or ``--set rsm.config.encryption.keys.ID.file=FILE``
(``.env=VARIABLE``): it then decrypts every object whole, so a chunk altered in
the store is a corrupt segment. A key missing, or one that does not open the
first segment encrypted under it (the wrong key), is a one-line error.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from tierlog.cli.errors import CliError
from tierlog.cli.options import key_value
from tierlog.cli.render import make_table, note, print_json, print_table
from tierlog.storage import topic_id_to_str
from tierlog.tiered import (
    IndexType,
    PartitionListing,
    RemoteSegmentStore,
    RemoteStorageConfigError,
    RemoteStorageError,
    list_partitions,
    object_store_from_location,
    verify_partition,
)
from tierlog.tiered.encrypted_objects import RemoteEncryptionKeyError
from tierlog.tiered.encryption_config import (
    ENABLED,
    EncryptionConfigError,
    encryption_from_config,
)
from tierlog.tiered.verify import encrypted_key_ids

__all__ = ["listing_json", "register"]

_SETTING_PREFIXES = ("rsm.config.storage.", "rsm.config.encryption.")

_EPILOG = """\
examples:
  tierlog remote ls --storage tierlog-data/remote-storage
  tierlog remote ls --storage tierlog-data/remote-storage --topic orders --json
  tierlog remote ls --storage s3://my-bucket/tierlog \\
      --set rsm.config.storage.s3.region=eu-west-1
  tierlog remote verify --storage tierlog-data/remote-storage --topic orders
  tierlog remote verify --storage tierlog-data/remote-storage --key-file k1=/etc/tierlog/k1.key \\
      --key-file k2=/etc/tierlog/k2.key
  tierlog remote ls --storage s3://bucket/prefix --set rsm.config.storage.s3.endpoint.url=http://127.0.0.1:9000 \\
      --set rsm.config.storage.s3.path.style.access.enabled=true
"""


def _segment_json(manifest) -> dict:
    m = manifest.metadata
    return {"segment_id": topic_id_to_str(m.segment_id.id), "start_offset": m.start_offset,
            "end_offset": m.end_offset, "leader_epochs": [list(e) for e in m.segment_leader_epochs],
            "max_timestamp_ms": m.max_timestamp_ms, "size_bytes": m.segment_size_in_bytes,
            "key_id": manifest.key_id}


def listing_json(store_name: str, listings: list[PartitionListing]) -> dict:
    partitions = []
    for p in listings:
        tp = p.topic_id_partition
        partitions.append({
            "topic": tp.topic, "partition": tp.partition, "topic_id": topic_id_to_str(tp.topic_id),
            "start_offset": p.start_offset, "end_offset": p.end_offset, "size_bytes": p.size_bytes,
            "segments": [_segment_json(s) for s in p.segments],
            "unfinished": [{"segment_id": topic_id_to_str(u.segment_uuid), "start_offset": u.start_offset,
                            "objects": list(u.suffixes), "reason": u.reason} for u in p.unfinished],
        })
    return {"storage": store_name, "partitions": partitions}


def _time(ms: int) -> str:
    if ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _print_table(listings: list[PartitionListing]) -> None:
    table = make_table("PARTITION", "START", "END", "LEADER EPOCHS", "MAX TIMESTAMP", "SIZE", "SEGMENT ID",
                       "STATE")
    for p in listings:
        name = f"{p.topic_id_partition.topic}-{p.topic_id_partition.partition}"
        rows = [(s.metadata.start_offset, str(s.metadata.end_offset),
                 " ".join(f"{e}@{o}" for e, o in s.metadata.segment_leader_epochs),
                 _time(s.metadata.max_timestamp_ms), str(s.metadata.segment_size_in_bytes),
                 topic_id_to_str(s.metadata.segment_id.id),
                 "finished" if s.key_id is None else f"finished (key {s.key_id})") for s in p.segments]
        rows += [(u.start_offset, "-", "-", "-", "-", topic_id_to_str(u.segment_uuid), f"unfinished ({u.reason})")
                 for u in p.unfinished]
        for start, *rest in sorted(rows, key=lambda r: r[0]):
            table.add_row(name, str(start), *rest)
    print_table(table)


def _settings(args: argparse.Namespace) -> dict[str, str]:
    foreign = sorted(key for key, _ in args.set or [] if not key.startswith(_SETTING_PREFIXES))
    if foreign:
        raise CliError(f"--set takes {' and '.join(p + '*' for p in _SETTING_PREFIXES)} settings only, "
                       f"not {', '.join(foreign)}")
    settings = dict(args.set or [])
    for key_id, path in getattr(args, "key_file", None) or []:
        settings[f"rsm.config.encryption.keys.{key_id}.file"] = path
    return settings


def _open_store(args: argparse.Namespace):
    settings = _settings(args)
    if not args.storage.startswith("s3://") and not Path(args.storage).is_dir():
        raise CliError(f"no remote storage directory {args.storage}")
    try:
        store = object_store_from_location(args.storage, settings)
        return store, list_partitions(store, args.topic)
    except (RemoteStorageConfigError, RemoteStorageError) as exc:
        raise CliError(str(exc)) from None


def _segment_store(store, settings: dict[str, str], listings: list[PartitionListing]) -> RemoteSegmentStore:
    """The store with the keys the encrypted segments need; a missing or wrong key is a CliError."""
    try:
        encryption = encryption_from_config({k: v for k, v in settings.items() if k != ENABLED})
    except EncryptionConfigError as exc:
        raise CliError(str(exc)) from None
    segments = RemoteSegmentStore(store, encryption)
    have = encryption.keys.key_ids if encryption.keys else []
    needed = encrypted_key_ids(listings)
    missing = sorted(set(needed) - set(have))
    if missing:
        raise CliError(f"segments are encrypted under key(s) {', '.join(missing)}: give each as --key-file "
                       f"ID=FILE (or --set rsm.config.encryption.keys.ID.file=FILE)")
    for key_id, manifest in needed.items():
        try:
            segments.fetch_index(manifest.metadata, IndexType.LEADER_EPOCH)
        except RemoteEncryptionKeyError as exc:
            raise CliError(f"key {key_id!r} does not open remote segment {manifest.metadata.start_offset} of "
                           f"{_partition_name(manifest)} (the wrong key?): {_detail(exc)}") from None
        except RemoteStorageError:
            pass                # missing or corrupt: verify reports it as a problem of that segment
    return segments


def _partition_name(manifest) -> str:
    tp = manifest.metadata.topic_id_partition
    return f"{tp.topic}-{tp.partition}"


def _detail(exc: Exception) -> str:
    return str(exc).split(": ", 1)[-1]


def run_verify(args: argparse.Namespace) -> int:
    store, listings = _open_store(args)
    segments = _segment_store(store, _settings(args), listings)
    try:
        problems = [p for listing in listings for p in verify_partition(store, listing, segments)]
    except RemoteStorageError as exc:
        raise CliError(str(exc)) from None
    checked = sum(len(p.segments) for p in listings)
    if args.json:
        print_json({"storage": store.describe(), "segments_checked": checked,
                    "problems": [_problem_json(p) for p in problems]})
    elif problems:
        table = make_table("PARTITION", "START", "END", "PROBLEM", "OBJECT", "DETAIL", "TO SKIP IT")
        for p in problems:
            table.add_row(f"{p.topic}-{p.partition}", str(p.start_offset), str(p.end_offset), p.kind,
                          p.key or "-", p.detail, _skip_command(p))
        print_table(table)
    if problems:
        raise CliError(f"{len(problems)} problem(s) in {checked} remote segment(s) of {store.describe()}")
    note(f"{checked} remote segment(s) in {len(listings)} partition(s) verified, no problem")
    return 0


def _problem_json(p) -> dict:
    return {"topic": p.topic, "partition": p.partition, "start_offset": p.start_offset,
            "end_offset": p.end_offset, "problem": p.kind, "object": p.key, "detail": p.detail}


def _skip_command(p) -> str:
    return f"tierlog delete-records --topic {p.topic} --partition {p.partition} --offset {p.end_offset + 1}"


def run_ls(args: argparse.Namespace) -> int:
    store, listings = _open_store(args)
    if args.json:
        print_json(listing_json(store.describe(), listings))
        return 0
    if not listings:
        what = f"topic {args.topic}" if args.topic else "partitions"
        note(f"no {what} in {store.describe()}")
        return 0
    _print_table(listings)
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "remote", help="inspect tiered (remote) storage without a broker",
        description="Inspect what tiered storage holds, straight from the store.", epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    ls = actions.add_parser(
        "ls", help="list partitions and segments in remote storage",
        description="List the partitions and segments in remote storage, with offset ranges, leader "
                    "epochs and max timestamps, from the segment manifests.", epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ls.add_argument("--storage", required=True, metavar="DIR|s3://BUCKET/PREFIX",
                    help="the remote storage: a directory or an S3 bucket and prefix")
    ls.add_argument("--topic", metavar="TOPIC", help="only this topic's partitions")
    ls.add_argument("--json", action="store_true", help="print one JSON object")
    ls.add_argument("--set", action="append", type=key_value, metavar="KEY=VALUE",
                    help="a remote storage setting (rsm.config.storage.*, rsm.config.encryption.*), repeatable")
    ls.set_defaults(func=run_ls)
    verify = actions.add_parser(
        "verify", help="check remote segments against their manifests (exit 1 on data loss)",
        description="Check every finished remote segment: each object its manifest names must exist "
                    "with the size and CRC-32C recorded at upload, and no offsets may be missing "
                    "between segments. Lists missing, corrupt and gap problems and exits 1 when "
                    "there is any; 'tierlog delete-records' moves the log start past one. Segments "
                    "encrypted at rest are decrypted whole, with the keys --key-file gives.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    verify.add_argument("--storage", required=True, metavar="DIR|s3://BUCKET/PREFIX",
                        help="the remote storage: a directory or an S3 bucket and prefix")
    verify.add_argument("--topic", metavar="TOPIC", help="only this topic's partitions")
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    verify.add_argument("--set", action="append", type=key_value, metavar="KEY=VALUE",
                        help="a remote storage setting (rsm.config.storage.*, rsm.config.encryption.*), "
                             "repeatable")
    verify.add_argument("--key-file", action="append", type=key_value, metavar="ID=FILE",
                        help="the key with id ID that segments are encrypted under (base64, hex or raw "
                             "32 bytes), repeatable; same as --set rsm.config.encryption.keys.ID.file=FILE")
    verify.set_defaults(func=run_verify)
