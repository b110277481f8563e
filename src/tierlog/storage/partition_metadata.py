"""``partition.metadata``: the topic id of a partition directory, as Kafka writes it.

Content (no trailing newline, like Kafka's formatter)::

    version: 0
    topic_id: <topic id as Kafka's Uuid.toString: base64url, no padding>
"""

from __future__ import annotations

import base64
from pathlib import Path

from tierlog.storage.errors import CorruptCheckpointError, InconsistentTopicIdError
from tierlog.storage.files import atomic_write

__all__ = [
    "PARTITION_METADATA_FILE",
    "read_topic_id",
    "reconcile_topic_id",
    "topic_id_from_str",
    "topic_id_to_str",
    "write_topic_id",
]

PARTITION_METADATA_FILE = "partition.metadata"
_VERSION = 0


def topic_id_to_str(topic_id: bytes) -> str:
    """Kafka's Uuid string form: URL-safe base64 of the 16 bytes without padding."""
    if len(topic_id) != 16:
        raise ValueError(f"a topic id is 16 bytes, got {len(topic_id)}")
    return base64.urlsafe_b64encode(topic_id).decode("ascii").rstrip("=")


def topic_id_from_str(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a 16-byte Kafka Uuid")
    return raw


def read_topic_id(directory: Path) -> bytes | None:
    """The topic id recorded in ``directory``, None if there is no file."""
    path = directory / PARTITION_METADATA_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return None
    if not lines:       # written but never synced when the machine went down (a new log's)
        return None
    fields = dict(_split(path, line) for line in lines if line.strip())
    if fields.get("version") != str(_VERSION) or "topic_id" not in fields:
        raise CorruptCheckpointError(f"{path}: expected 'version: 0' and 'topic_id: ...'")
    try:
        return topic_id_from_str(fields["topic_id"])
    except ValueError as exc:
        raise CorruptCheckpointError(f"{path}: {exc}") from None


def write_topic_id(directory: Path, topic_id: bytes, sync: bool = True) -> None:
    text = f"version: {_VERSION}\ntopic_id: {topic_id_to_str(topic_id)}"
    atomic_write(directory / PARTITION_METADATA_FILE, text.encode("utf-8"), sync)


def _split(path: Path, line: str) -> tuple[str, str]:
    key, sep, value = line.partition(":")
    if not sep:
        raise CorruptCheckpointError(f"{path}: malformed line {line!r}")
    return key.strip(), value.strip()


def reconcile_topic_id(directory: Path, topic_id: bytes | None, sync: bool = True) -> bytes | None:
    """The directory's topic id: the recorded one when ``topic_id`` is None, else
    ``topic_id`` (recorded now if none was); a different recorded id is an error."""
    recorded = read_topic_id(directory)
    if topic_id is None:
        return recorded
    if recorded is not None and recorded != topic_id:
        raise InconsistentTopicIdError(f"{directory} belongs to another topic id than the one given")
    if recorded is None:
        write_topic_id(directory, topic_id, sync)
    return topic_id
