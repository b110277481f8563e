"""Whether ``tierlog up`` may use a data dir: the nodes already there and their roles
must be the ones its arguments plan, and no node may be running on it.

Controllers added with ``tierlog up --add-controller`` (an ``added-controller`` marker in their
node dir) are not part of the layout. Reusing the data of 3 controllers + 3 brokers with ``--combined --controllers 1``
would restart node 1 as a quorum of its own over data written by another quorum;
so the existing layout must match: the same voters with the same roles, and
every node already there planned again with its roles.  New broker-only nodes
may be added.  A node's data dir in use (its ``.lock`` held) is refused before
anything is written.
"""
from __future__ import annotations

from pathlib import Path

from tierlog.config import ConfigError, parse_properties
from tierlog.storage.dir_lock import DirInUseError, check_free

__all__ = ["ADDED_MARKER", "check_data_dir", "existing_layout", "layout_mismatch"]

ADDED_MARKER = "added-controller"     # in node-<id>/: a controller `up --add-controller` started, not planned


def existing_layout(data_dir: Path) -> dict[int, tuple[str, ...]]:
    """node id -> sorted roles, from the ``node-<id>/server.properties`` files a previous run wrote."""
    out = {}
    for conf in sorted(data_dir.glob("node-*/server.properties")):
        if (conf.parent / ADDED_MARKER).exists():
            continue        # a voter added to the running cluster: `up` does not plan it
        try:
            props = parse_properties(conf.read_text())
            out[int(props["node.id"])] = tuple(sorted(r.strip() for r in props["process.roles"].split(",")))
        except (OSError, KeyError, ValueError, ConfigError):
            continue        # not one of ours: ignored
    return out


def layout_mismatch(existing: dict[int, tuple[str, ...]], planned: dict[int, tuple[str, ...]]) -> str | None:
    """Why ``planned`` cannot reuse ``existing`` (None: it can)."""
    for node_id, roles in sorted(existing.items()):
        if node_id not in planned:
            return f"node {node_id} ({'+'.join(roles)}) is not in the planned cluster"
        if planned[node_id] != roles:
            return f"node {node_id} was {'+'.join(roles)}, now planned as {'+'.join(planned[node_id])}"
    added_voters = sorted(n for n, r in planned.items() if n not in existing and "controller" in r)
    if existing and added_voters:
        return f"controller node {added_voters[0]} would join the existing quorum"
    return None


def check_data_dir(data_dir: Path, planned: dict[int, tuple[str, ...]]) -> str | None:
    """A one-line refusal of ``data_dir`` for this plan, or None."""
    existing = existing_layout(data_dir)
    mismatch = layout_mismatch(existing, planned)
    if mismatch is not None:
        shape = _describe(existing)
        return (f"{data_dir} holds a cluster of {shape} that these arguments do not match ({mismatch}); "
                "start it with the arguments it was created with, or use another --data-dir")
    for node_id in sorted(set(existing) | set(planned)):
        try:
            check_free(data_dir / f"node-{node_id}" / "data")
        except DirInUseError as e:
            return str(e)
    return None


def _describe(layout: dict[int, tuple[str, ...]]) -> str:
    combined = sum(1 for r in layout.values() if len(r) == 2)
    controllers = sum(1 for r in layout.values() if r == ("controller",))
    brokers = sum(1 for r in layout.values() if r == ("broker",))
    parts = [f"{n} {what}" for n, what in ((combined, "combined"), (controllers, "controllers"),
                                            (brokers, "brokers")) if n]
    return " + ".join(parts)
