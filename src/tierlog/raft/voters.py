"""The voter set of a dynamic quorum (KIP-853) and its history in the log.

A voter is a replica key, (id, directory id), with the endpoints others reach it
at. A node is a voter only when its id AND its directory id match an entry: a
controller whose disk was wiped comes back with a new directory id, so it is an
observer (it forgot its votes and its log) until it is added again.

Rules (KIP-853):

- With ``kraft.version`` 1 the voter set lives in the log as ``VotersRecord``
  control records (type 6) and in every snapshot; the set in effect is the LATEST
  one in the log, committed or not. A truncation that removes a VotersRecord
  reverts to the one before it (``VoterHistory.truncate_to``); the bootstrap set
  (the one the cluster was formatted with) is in effect before any record.
- With ``kraft.version`` 0 the set is the static ``controller.quorum.voters`` and
  never changes; there are no directory ids (``NO_DIRECTORY``).
- Membership changes one voter at a time, so any majority of the old set meets any
  majority of the new one (leader_voters.py holds the leader's rules).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from tierlog.protocol.messages.control_records import (
    KRAFT_VERSION,
    KRAFT_VOTERS,
    decode_control_value,
    encode_control_value,
)

__all__ = [
    "KRAFT_VERSION", "KRAFT_VERSION_DYNAMIC", "KRAFT_VERSION_STATIC", "KRAFT_VOTERS", "MAX_VOTERS",
    "NO_DIRECTORY", "Endpoint", "Voter", "VoterHistory", "VoterSet", "decode_kraft_version", "decode_voters",
    "encode_kraft_version", "encode_voters", "relisted",
]

NO_DIRECTORY = bytes(16)   # Kafka's Uuid.ZERO: a voter known by id only (kraft.version 0)
KRAFT_VERSION_STATIC = 0   # controller.quorum.voters, fixed
KRAFT_VERSION_DYNAMIC = 1  # KIP-853: voters in the log, AddRaftVoter / RemoveRaftVoter
#: a bound on one VotersRecord (and so on AddRaftVoter): Kafka sets none; ours is named
MAX_VOTERS = 64


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str   # the listener name, e.g. CONTROLLER
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Voter:
    voter_id: int
    directory_id: bytes = NO_DIRECTORY
    endpoints: tuple[Endpoint, ...] = ()
    min_kraft_version: int = 0
    max_kraft_version: int = KRAFT_VERSION_DYNAMIC

    def matches(self, node_id: int, directory_id: bytes | None) -> bool:
        """Whether replica (node_id, directory_id) is this voter; an unknown directory
        on either side matches any (kraft.version 0)."""
        if node_id != self.voter_id:
            return False
        return directory_id in (None, NO_DIRECTORY) or self.directory_id in (NO_DIRECTORY, directory_id)


class VoterSet:
    """An immutable set of voters keyed by id (one directory per id)."""

    __slots__ = ("_by_id",)

    def __init__(self, voters: Iterable[Voter]):
        self._by_id = {v.voter_id: v for v in sorted(voters, key=lambda v: v.voter_id)}

    @classmethod
    def of_ids(cls, ids: Iterable[int]) -> VoterSet:
        return cls(Voter(i) for i in ids)

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(self._by_id)

    def get(self, voter_id: int) -> Voter | None:
        return self._by_id.get(voter_id)

    def is_voter(self, node_id: int, directory_id: bytes | None) -> bool:
        v = self._by_id.get(node_id)
        return v is not None and v.matches(node_id, directory_id)

    def majority(self) -> int:
        return len(self._by_id) // 2 + 1

    def with_voter(self, voter: Voter) -> VoterSet:
        return VoterSet([*self._by_id.values(), voter])

    def without(self, voter_id: int) -> VoterSet:
        return VoterSet(v for v in self._by_id.values() if v.voter_id != voter_id)

    def with_endpoints(self, voter_id: int, endpoints: tuple[Endpoint, ...]) -> VoterSet:
        return VoterSet(replace(v, endpoints=endpoints) if v.voter_id == voter_id else v
                        for v in self._by_id.values())

    def __iter__(self) -> Iterator[Voter]:
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VoterSet) and self._by_id == other._by_id

    def __hash__(self) -> int:
        return hash(tuple(self._by_id.values()))

    def __repr__(self) -> str:
        return f"VoterSet({sorted(self._by_id)})"


def relisted(voter: Voter, listeners: tuple[Endpoint, ...]) -> tuple[Endpoint, ...] | None:
    """The endpoints a voter serving ``listeners`` should be listed with (its other listeners'
    entries kept, these replaced), or None when its listing already names every one of them."""
    listed = {e.name: e for e in voter.endpoints}
    if all(listed.get(e.name) == e for e in listeners):
        return None
    names = {e.name for e in listeners}
    return tuple(e for e in voter.endpoints if e.name not in names) + listeners


def encode_voters(voters: VoterSet) -> bytes:
    """A version-0 VotersRecord payload."""
    return encode_control_value(KRAFT_VOTERS, {"Version": 0, "Voters": [
        {"VoterId": v.voter_id, "VoterUuid": v.directory_id,
         "Endpoints": [{"Name": e.name, "Host": e.host, "Port": e.port} for e in v.endpoints],
         "KRaftVersionFeature": {"MinSupportedVersion": v.min_kraft_version,
                                 "MaxSupportedVersion": v.max_kraft_version}}
        for v in voters]})


def decode_voters(value: bytes) -> VoterSet:
    """A VotersRecord payload; ProtocolError if malformed."""
    out = []
    for v in decode_control_value(KRAFT_VOTERS, value)["Voters"]:
        feature = v["KRaftVersionFeature"]
        out.append(Voter(v["VoterId"], bytes(v["VoterUuid"]),
                         tuple(Endpoint(e["Name"], e["Host"], e["Port"]) for e in v["Endpoints"]),
                         feature["MinSupportedVersion"], feature["MaxSupportedVersion"]))
    return VoterSet(out)


def encode_kraft_version(version: int) -> bytes:
    return encode_control_value(KRAFT_VERSION, {"Version": 0, "KRaftVersion": version})


def decode_kraft_version(value: bytes) -> int:
    version: int = decode_control_value(KRAFT_VERSION, value)["KRaftVersion"]
    return version


class VoterHistory:
    """The voter sets written in the log, by the offset of their VotersRecord.

    ``bootstrap`` is in effect before the first record (offset -1). Entries below the
    log begin offset are pruned except the one in effect there (a snapshot holds it).
    """

    def __init__(self, bootstrap: VoterSet):
        self._offsets: list[int] = [-1]
        self._sets: list[VoterSet] = [bootstrap]

    def latest(self) -> VoterSet:
        return self._sets[-1]

    @property
    def latest_offset(self) -> int:
        """Offset of the VotersRecord of the set in effect; -1 for the bootstrap set."""
        return self._offsets[-1]

    def at(self, offset: int) -> VoterSet:
        """The set in effect once the log holds every offset up to ``offset`` inclusive."""
        return self._sets[bisect.bisect_right(self._offsets, offset) - 1]

    def offset_at(self, offset: int) -> int:
        """Offset of the VotersRecord of ``at(offset)``; -1 for the bootstrap set."""
        return self._offsets[bisect.bisect_right(self._offsets, offset) - 1]

    def sets_from(self, offset: int) -> list[VoterSet]:
        """The set in effect at ``offset`` and every later one."""
        return self._sets[bisect.bisect_right(self._offsets, offset) - 1:]

    def changes_from(self, offset: int) -> int:
        """How many VotersRecords sit at ``offset`` or after (the uncommitted ones, from the HW)."""
        return len(self._offsets) - bisect.bisect_left(self._offsets, offset)

    def add(self, offset: int, voters: VoterSet) -> None:
        assert offset > self._offsets[-1], (offset, self._offsets[-1])
        self._offsets.append(offset)
        self._sets.append(voters)

    def truncate_to(self, end_offset: int) -> None:
        """The log lost every offset >= ``end_offset``: forget the sets written there."""
        keep = max(bisect.bisect_left(self._offsets, end_offset), 1)
        del self._offsets[keep:]
        del self._sets[keep:]

    def reset(self, offset: int, voters: VoterSet) -> None:
        """The log restarts at a snapshot ending at ``offset`` that holds ``voters``."""
        self._offsets = [offset - 1]
        self._sets = [voters]

    def prune_before(self, offset: int) -> None:
        """Forget sets superseded before ``offset`` (the log begin offset moved there)."""
        i = bisect.bisect_right(self._offsets, offset - 1) - 1
        if i > 0:
            del self._offsets[:i]
            del self._sets[:i]

    def __len__(self) -> int:
        return len(self._sets)
