"""meta.properties in every data dir (Kafka's layout): the cluster id, the node id and the
dir's own ``directory.id`` (KIP-858), written once and checked at every start.

The metadata log dir's directory id is also the node's replica key in a dynamic controller
quorum (KIP-853): a controller whose disk was wiped gets a new one, so the quorum knows it
forgot its log and its votes. ``tierlog format`` writes the files before the first start
(so ``tierlog metadata quorum add-controller --command-config`` can read the id); a node
started on dirs without them writes them itself.
"""
from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from tierlog.config import ConfigError, parse_properties
from tierlog.protocol.kafka_uuid import random_uuid, uuid_str

__all__ = ["META_PROPERTIES", "ensure_meta_properties", "kafka_uuid_bytes", "kafka_uuid_str", "read_directory_id"]

META_PROPERTIES = "meta.properties"


def ensure_meta_properties(dirs: Iterable[Path], node_id: int, configured_cluster_id: str | None,
                           fixed_ids: Mapping[Path, str] | None = None) -> tuple[str, dict[Path, bytes]]:
    """Every dir carries meta.properties with the same cluster and node id, as in Kafka, and a
    ``directory.id`` of its own (added to a file that has none: ``fixed_ids`` names it, else a
    new one). Returns the cluster id and each dir's directory id; ConfigError on a mismatch."""
    dirs = list(dirs)
    found = {}
    for d in dirs:
        path = d / META_PROPERTIES
        if path.exists():
            found[d] = parse_properties(path.read_text())
    for d, props in found.items():
        if props.get("node.id") != str(node_id):
            raise ConfigError(f"{d / META_PROPERTIES}: node.id {props.get('node.id')} does not match "
                              f"node.id {node_id} in the config")
        if not props.get("cluster.id"):
            raise ConfigError(f"{d / META_PROPERTIES}: no cluster.id")
    ids = {p["cluster.id"] for p in found.values()} | ({configured_cluster_id} if configured_cluster_id else set())
    if len(ids) > 1:
        raise ConfigError(f"log dirs belong to different clusters: {sorted(i for i in ids if i)}")
    cluster_id = ids.pop() if ids else uuid_str(random_uuid())
    dir_ids = {}
    for d in dirs:
        dir_id = found.get(d, {}).get("directory.id")
        if dir_id is None:
            dir_id = (fixed_ids or {}).get(d) or uuid_str(random_uuid())
            d.mkdir(parents=True, exist_ok=True)
            _write_atomically(d / META_PROPERTIES, f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n"
                                                   f"directory.id={dir_id}\n")
        dir_ids[d] = kafka_uuid_bytes(dir_id)
    return cluster_id, dir_ids


def read_directory_id(data_dir: Path) -> bytes | None:
    """The ``directory.id`` of ``data_dir``'s meta.properties (None: no file or no id)."""
    path = data_dir / META_PROPERTIES
    if not path.exists():
        return None
    text = parse_properties(path.read_text()).get("directory.id")
    return kafka_uuid_bytes(text) if text else None


kafka_uuid_str = uuid_str


def kafka_uuid_bytes(text: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raw = b""
    if len(raw) != 16:
        raise ConfigError(f"meta.properties: directory.id {text!r} is not a Kafka Uuid")
    return raw


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
