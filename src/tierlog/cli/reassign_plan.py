"""Reassignment plans for `tierlog reassign`: the JSON files of kafka-reassign-partitions.sh.

A plan (``--reassignment-json-file``; what ``--generate`` proposes and
``--execute`` prints as the rollback plan)::

    {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [4, 5]}, ...]}

``log_dirs`` (one entry per replica, ``"any"`` or an absolute log dir path of
that broker) moves replicas between a broker's log dirs (``reassign_log_dirs``;
``parse_plan_dirs`` returns them).  The topics to move (``--topics-to-move-json-file``)::

    {"version": 1, "topics": [{"topic": "t"}, ...]}

Everything here is pure: files are read by the caller's ``read_json``, and a
malformed file is one `CliError` line naming the file and the entry.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from tierlog.cli.errors import CliError
from tierlog.cli.reassign_log_dirs import ReplicaDirs, parse_log_dirs
from tierlog.controller.placement import PlacementError, UsableBroker, place

__all__ = ["MAX_JSON_FILE_BYTES", "Plan", "broker_list", "parse_plan", "parse_plan_dirs", "parse_topics",
           "plan_document", "plan_text", "propose", "read_json", "status"]

MAX_JSON_FILE_BYTES = 16 * 1024 * 1024
COMPLETE, IN_PROGRESS, FAILED = "complete", "in progress", "failed"

Plan = dict[tuple[str, int], tuple[int, ...]]


def read_json(path: Path):
    try:
        if path.stat().st_size > MAX_JSON_FILE_BYTES:
            raise CliError(f"{path}: larger than {MAX_JSON_FILE_BYTES} bytes")
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CliError(f"{path}: not valid JSON ({exc})") from None


def broker_list(text: str) -> list[int]:
    """``--broker-list 1,2,3`` (argparse type)."""
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected broker ids like 1,2,3, got {text!r}") from None
    if any(i < 0 for i in ids) or len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"expected distinct broker ids >= 0, got {text!r}")
    return ids


def _entries(data, key: str, source: str) -> list:
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise CliError(f'{source}: expected {{"version": 1, "{key}": [...]}}')
    if data.get("version", 1) != 1:
        raise CliError(f"{source}: unsupported version {data.get('version')!r} (only 1)")
    if not data[key]:
        raise CliError(f"{source}: no {key} listed")
    return data[key]


def _is_id(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_plan(data, source: str) -> Plan:
    """(topic, partition) -> target replicas, in file order."""
    return parse_plan_dirs(data, source)[0]


def parse_plan_dirs(data, source: str) -> tuple[Plan, ReplicaDirs]:
    """The plan and the log dirs it names for replicas ((topic, partition, broker) -> path)."""
    plan: Plan = {}
    dirs: ReplicaDirs = {}
    for i, e in enumerate(_entries(data, "partitions", source)):
        if not (isinstance(e, dict) and isinstance(e.get("topic"), str) and e["topic"] and _is_id(e.get("partition"))
                and isinstance(e.get("replicas"), list) and all(_is_id(r) for r in e["replicas"])):
            raise CliError(f'{source}: partitions[{i}] must be {{"topic": NAME, "partition": N, '
                           f'"replicas": [BROKER, ...]}}')
        key, replicas = (e["topic"], e["partition"]), tuple(e["replicas"])
        name = f"{key[0]}-{key[1]}"
        if key in plan:
            raise CliError(f"{source}: {name} is listed twice")
        if not replicas:
            raise CliError(f"{source}: {name} has an empty replica list")
        if len(set(replicas)) != len(replicas):
            raise CliError(f"{source}: {name} lists a broker twice: {list(replicas)}")
        dirs.update(parse_log_dirs(e, replicas, name, source))
        plan[key] = replicas
    return plan, dirs


def parse_topics(data, source: str) -> list[str]:
    names = []
    for i, e in enumerate(_entries(data, "topics", source)):
        if not (isinstance(e, dict) and isinstance(e.get("topic"), str) and e["topic"]):
            raise CliError(f'{source}: topics[{i}] must be {{"topic": NAME}}')
        if e["topic"] in names:
            raise CliError(f"{source}: topic {e['topic']!r} is listed twice")
        names.append(e["topic"])
    return names


def plan_document(plan: Plan) -> dict:
    """A plan in kafka-reassign-partitions' JSON form, partitions sorted by topic and partition."""
    partitions = [{"topic": t, "partition": p, "replicas": list(plan[(t, p)])} for t, p in sorted(plan)]
    return {"version": 1, "partitions": partitions}


def plan_text(plan: Plan) -> str:
    """A plan as one line of JSON (`plan_document`)."""
    return json.dumps(plan_document(plan), separators=(",", ":"))


def propose(current: Plan, brokers: list[UsableBroker], rng: random.Random) -> Plan:
    """New replicas for every partition of ``current`` over ``brokers`` (rack-aware striping),
    each topic keeping its replication factor."""
    by_topic: dict[str, list[int]] = {}
    for t, p in current:
        by_topic.setdefault(t, []).append(p)
    proposed: Plan = {}
    for topic, parts in sorted(by_topic.items()):
        rf = len(current[(topic, min(parts))])
        try:
            placed = place(brokers, max(parts) + 1, rf, rng)
        except PlacementError as exc:
            raise CliError(f"cannot place topic {topic!r}: {exc}") from None
        proposed.update({(topic, p): placed[p] for p in parts})
    return proposed


def status(target: tuple[int, ...], replicas: tuple[int, ...] | None, ongoing: bool) -> str:
    """--verify's verdict on one partition: COMPLETE, IN_PROGRESS or FAILED.

    ``ongoing`` comes from ListPartitionReassignments, asked *before* the
    broker's Metadata gave ``replicas``.  Replicas that are the target followed
    by more brokers are the merged list of a reassignment to the target: it
    ended at the controller and this broker's metadata has not caught up yet,
    so it still counts as in progress.
    """
    target = tuple(target)
    if ongoing:
        return IN_PROGRESS
    if replicas is None:
        return FAILED
    replicas = tuple(replicas)
    if replicas == target:
        return COMPLETE
    return IN_PROGRESS if replicas[:len(target)] == target else FAILED
