"""New ids follow Kafka's Uuid.randomUuid: never one whose string starts with '-' (a CLI would
read it as an option), never the zero or metadata-topic id."""
from __future__ import annotations

import random

from tierlog.protocol.kafka_uuid import random_uuid, uuid_str

DASH_FIRST = 0xF8 << 120  # first six bits 111110: base64url's '-'


def test_an_id_whose_string_starts_with_a_dash_is_drawn_again():
    draws = iter([DASH_FIRST, DASH_FIRST | 1, 0x1234 << 100])
    raw = random_uuid(lambda: next(draws))
    assert uuid_str(raw) == uuid_str(random_uuid(lambda: 0x1234 << 100))
    assert not uuid_str(raw).startswith("-")
    assert next(draws, None) is None


def test_drawn_ids_are_version_4_and_never_start_with_a_dash():
    rng = random.Random(7)
    ids = [random_uuid(lambda: rng.getrandbits(128)) for _ in range(2000)] + [random_uuid() for _ in range(2000)]
    assert all(raw[6] >> 4 == 4 and len(uuid_str(raw)) == 22 for raw in ids)
    assert not any(uuid_str(raw).startswith("-") for raw in ids)
