"""Kafka's Uuid as the tools show it, and new ones drawn as Kafka draws them.

Kafka's ``Uuid.randomUuid`` never returns the all-zero id (ZERO_UUID), the metadata topic's id
(``...0001``, METADATA_TOPIC_ID), or an id whose string starts with ``-``: a command-line parser
takes ``--controller-directory-id -KUr...`` for an option, not for the value. Every id tierlog
draws (cluster, directory, topic) follows the same rule."""
from __future__ import annotations

import base64
import uuid
from collections.abc import Callable

__all__ = ["random_uuid", "uuid_str"]

_RESERVED = (bytes(16), bytes(15) + b"\x01")


def uuid_str(raw: bytes) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def random_uuid(bits: Callable[[], int] | None = None) -> bytes:
    """A version-4 uuid (from ``bits()``, 128 random bits, else the OS) that Kafka's
    Uuid.randomUuid could have returned."""
    while True:
        raw = uuid.UUID(int=bits(), version=4).bytes if bits else uuid.uuid4().bytes
        if raw not in _RESERVED and not uuid_str(raw).startswith("-"):
            return raw
