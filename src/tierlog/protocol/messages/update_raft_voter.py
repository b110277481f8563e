"""UpdateRaftVoter (key 82), version 0, flexible (KIP-853).

A voter tells the leader its current listeners and the kraft.version range it
supports (sent at start-up when they changed). The response carries the leader
it knows as tag 0. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

from .raft_voter_common import VOTER_LISTENER

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_KRAFT_VERSION_FEATURE = Struct([
    Field("MinSupportedVersion", "int16"),
    Field("MaxSupportedVersion", "int16"),
], name="KRaftVersionFeature")

REQUEST = Struct([
    Field("ClusterId", "string", nullable="0+", default=None),
    Field("CurrentLeaderEpoch", "int32"),
    Field("VoterId", "int32"),
    Field("VoterDirectoryId", "uuid"),
    Field("Listeners", [VOTER_LISTENER]),
    Field("KRaftVersionFeature", _KRAFT_VERSION_FEATURE),
], name="UpdateRaftVoterRequest")

_CURRENT_LEADER = Struct([
    Field("LeaderId", "int32", default=-1),
    Field("LeaderEpoch", "int32", default=-1),
    Field("Host", "string"),
    Field("Port", "int32"),
], name="CurrentLeader")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("CurrentLeader", _CURRENT_LEADER, tag=0),
], name="UpdateRaftVoterResponse")

SPEC = ApiSpec(ApiKey.UPDATE_RAFT_VOTER, "UpdateRaftVoter", 0, 0, 0, REQUEST, RESPONSE)
