"""Client quotas in the metadata image (Kafka's ClientQuotasImage) and their rules.

An entity is a sorted tuple of (entity type, name) pairs, the name None for the type's
default: ``(("user", "alice"),)``, ``(("client-id", None), ("user", "alice"))``,
``(("ip", None),)``. The image maps each entity to its quota values (key -> float), built
from ClientQuotaRecords; snapshots write ``records()``.

What a client gets (KIP-55's precedence; ``resolve``): for a connection of user U with
client id C, per quota key the first of these entities that sets it:

    1. user U, client-id C           5. user <default>, client-id <default>
    2. user U, client-id <default>   6. user <default>
    3. user U                        7. client-id C
    4. user <default>, client-id C   8. client-id <default>

The entity found also names the sensor the usage is counted in (Kafka's metric tags):
``user`` is U when the entity has a user part, else ""; ``client-id`` likewise. So a quota
on user U (level 3) is shared by every client id of U, and a default (level 6) gives each
user a quota of its own. IP entities (KIP-612) hold ``connection_creation_rate`` only, the
IP's own entity first, then the default IP.

``check_entity`` / ``check_op`` are AlterClientQuotas' validation (the controller's), and
``describe`` answers DescribeClientQuotas' filters (match exact / default / any, strict).
"""
from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .quota_records import ClientQuotaRecord, EntityData

__all__ = [
    "CLIENT_ID",
    "CONNECTION_CREATION_RATE",
    "CONSUMER_BYTE_RATE",
    "CONTROLLER_MUTATION_RATE",
    "IP",
    "MATCH_ANY",
    "MATCH_DEFAULT",
    "MATCH_EXACT",
    "PRODUCER_BYTE_RATE",
    "REQUEST_PERCENTAGE",
    "USER",
    "ClientQuotasImage",
    "QuotaEntity",
    "check_entity",
    "check_filter",
    "check_op",
    "entity_of",
]

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2     # DescribeClientQuotas' MatchType

#: the keys of a user / client-id entity and of an ip entity; True: a whole number (Kafka's LONG / INT)
_CLIENT_KEYS = {PRODUCER_BYTE_RATE: True, CONSUMER_BYTE_RATE: True, REQUEST_PERCENTAGE: False,
                CONTROLLER_MUTATION_RATE: False}
_IP_KEYS = {CONNECTION_CREATION_RATE: True}

QuotaEntity = tuple[tuple[str, "str | None"], ...]
_EMPTY: Mapping[QuotaEntity, Mapping[str, float]] = MappingProxyType({})


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> QuotaEntity:
    return tuple(sorted(pairs, key=lambda p: p[0]))


def _levels(user: str, client_id: str) -> tuple[tuple[QuotaEntity, str, str], ...]:
    """KIP-55's 8 entities of (user, client id), most specific first, each with its sensor's tags."""
    u, c = (USER, user), (CLIENT_ID, client_id)
    du, dc = (USER, None), (CLIENT_ID, None)
    return (((c, u), user, client_id), ((dc, u), user, client_id), ((u,), user, ""),
            ((c, du), user, client_id), ((dc, du), user, client_id), ((du,), user, ""),
            ((c,), "", client_id), ((dc,), "", client_id))


@dataclass(frozen=True, slots=True)
class ClientQuotasImage:
    entities: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=lambda: _EMPTY)

    def __len__(self) -> int:
        return len(self.entities)

    def resolve(self, user: str, client_id: str, key: str) -> tuple[float, str, str] | None:
        """(quota, user tag, client-id tag) of ``key`` for this client (KIP-55), or None: unlimited."""
        for entity, user_tag, client_tag in _levels(user, client_id):
            values = self.entities.get(entity)
            if values is not None and key in values:
                return values[key], user_tag, client_tag
        return None

    def ip_rate(self, ip: str) -> float | None:
        """``connection_creation_rate`` of ``ip``: its own, else the default IP's (KIP-612), else None."""
        for name in (ip, None):
            values = self.entities.get(((IP, name),))
            if values is not None and CONNECTION_CREATION_RATE in values:
                return values[CONNECTION_CREATION_RATE]
        return None

    def with_changes(self, changes: Mapping[QuotaEntity, Mapping[str, float | None]]) -> ClientQuotasImage:
        """``changes``: entity -> key -> new value, None to remove the key."""
        if not changes:
            return self
        out = dict(self.entities)
        for entity, keys in changes.items():
            values = dict(out.get(entity) or {})
            for key, value in keys.items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
            if values:
                out[entity] = MappingProxyType(values)
            else:
                out.pop(entity, None)
        return ClientQuotasImage(MappingProxyType(out))

    def records(self) -> Iterator[ClientQuotaRecord]:
        for entity in sorted(self.entities, key=_sort_key):
            for key, value in sorted(self.entities[entity].items()):
                yield ClientQuotaRecord(tuple(EntityData(t, n) for t, n in entity), key, value)

    def describe(self, components: Sequence[Mapping[str, Any]], strict: bool) -> list[dict[str, Any]]:
        """DescribeClientQuotas' Entries for a filter ``check_filter`` accepted."""
        wanted = {c["EntityType"]: c for c in components}
        entries = []
        for entity in sorted(self.entities, key=_sort_key):
            types = {t: n for t, n in entity}
            if strict and set(types) != set(wanted):
                continue
            if all(t in types and _matches(c, types[t]) for t, c in wanted.items()):
                entries.append({"Entity": [{"EntityType": t, "EntityName": n} for t, n in entity],
                                "Values": [{"Key": k, "Value": v} for k, v in sorted(self.entities[entity].items())]})
        return entries


def _sort_key(entity: QuotaEntity) -> tuple[tuple[str, bool, str], ...]:
    return tuple((t, n is not None, n or "") for t, n in entity)


def _matches(component: Mapping[str, Any], name: str | None) -> bool:
    match_type = component["MatchType"]
    if match_type == MATCH_EXACT:
        return name is not None and name == component["Match"]
    if match_type == MATCH_DEFAULT:
        return name is None
    return True


def check_filter(components: Sequence[Mapping[str, Any]]) -> str | None:
    """Why a DescribeClientQuotas filter is invalid (INVALID_REQUEST), or None."""
    seen: set[str] = set()
    for c in components:
        entity_type = c["EntityType"]
        if entity_type not in (USER, CLIENT_ID, IP):
            return f"Unknown entity type: {entity_type}"
        if entity_type in seen:
            return f"Entity type {entity_type} cannot appear more than once in the filter"
        seen.add(entity_type)
        if c["MatchType"] not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY):
            return f"Unknown match type: {c['MatchType']}"
        if c["MatchType"] == MATCH_EXACT and c.get("Match") is None:
            return f"An exact match of entity type {entity_type} needs a name"
    if IP in seen and len(seen) > 1:
        return "An ip filter cannot be combined with user or client-id filters"
    return None


def check_entity(pairs: Sequence[tuple[str, str | None]]) -> str | None:
    """Why an AlterClientQuotas entity is invalid (INVALID_REQUEST), or None."""
    if not pairs:
        return "Invalid empty client quota entity"
    types = [t for t, _ in pairs]
    if len(set(types)) != len(types):
        return f"Duplicate entity type in entity {types}"
    for entity_type, name in pairs:
        if entity_type not in (USER, CLIENT_ID, IP):
            return f"Unknown entity type: {entity_type}"
        if name is not None and not name and entity_type != CLIENT_ID:
            return f"An empty {entity_type} name is invalid (null names the default)"
    if IP in types:
        if len(types) > 1:
            return "An ip entity cannot be combined with user or client-id"
        name = pairs[0][1]
        if name is not None and not _is_ip(name):
            return f"{name} is not a valid IP address"
    return None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def check_op(entity: QuotaEntity, key: str, value: float, remove: bool) -> str | None:
    """Why setting (or removing) ``key`` on ``entity`` is invalid (INVALID_REQUEST), or None."""
    keys = _IP_KEYS if entity and entity[0][0] == IP else _CLIENT_KEYS
    if key not in keys:
        return f"Invalid quota key {key} for entity {[t for t, _ in entity]} (valid: {', '.join(sorted(keys))})"
    if remove:
        return None
    if math.isnan(value) or math.isinf(value) or value <= 0:
        return f"Illegal value {value} for quota {key}: it must be a positive number"
    if keys[key] and value != int(value):
        return f"Quota {key} must be a whole number, not {value}"
    return None
